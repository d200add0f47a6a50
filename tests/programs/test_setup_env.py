"""`scripts/setup_env.sh`, which both README commands call first: a disk
without room for an environment is one line before anything is installed,
and a failed install leaves no half-built environment behind.

Each test runs a copy of the script in a scratch root with a requirements
file of its own, so the project's `.venvs/` are never touched, and needs no
package index (PIP_NO_INDEX)."""
import os
import shutil
import stat
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _root(tmp_path, requirements):
  """A scratch root holding the script and requirements/probe.txt."""
  (tmp_path / "scripts").mkdir(parents=True)
  shutil.copy(os.path.join(REPO, "scripts", "setup_env.sh"),
              tmp_path / "scripts")
  (tmp_path / "requirements").mkdir()
  (tmp_path / "requirements" / "probe.txt").write_text(requirements)
  return tmp_path


def _setup(root, path_prefix=None):
  env = dict(os.environ, PYTHON=sys.executable, PIP_NO_INDEX="1")
  if path_prefix:
    env["PATH"] = f"{path_prefix}{os.pathsep}{env['PATH']}"
  return subprocess.run(["bash", str(root / "scripts" / "setup_env.sh"),
                         "probe"], capture_output=True, text=True,
                        timeout=300, env=env)


def test_too_little_disk_is_one_line_and_installs_nothing(tmp_path):
  root = _root(tmp_path / "root", "numpy\n")
  fake = tmp_path / "bin"
  fake.mkdir()
  # A `df -Pk` that reports 1 GiB (1,048,576 KiB) available.
  (fake / "df").write_text(
      "#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity "
      "Mounted on'\necho '/dev/x 9999999 8951423 1048576 90% /'\n")
  (fake / "df").chmod(stat.S_IRWXU)
  result = _setup(root, path_prefix=fake)
  assert result.returncode == 1
  assert result.stderr.strip() == (
      f"setup_env.sh: 1 GB free on the disk of {root}/.venvs; the 'probe' "
      "environment needs about 3 GB: free some space and run again")
  assert not (root / ".venvs" / "probe").exists()


def test_a_failed_install_leaves_no_environment(tmp_path):
  root = _root(tmp_path, "xlnet-test-no-such-package==0.0.1\n")
  result = _setup(root)
  assert result.returncode != 0
  assert "xlnet-test-no-such-package" in result.stderr
  assert (root / ".venvs").is_dir()
  assert not (root / ".venvs" / "probe").exists()
