"""`scripts/setup_env.sh`, which both README commands call first: a disk
without room for an environment is one line before anything is installed,
a failed install leaves no half-built environment behind, and an
environment built on another's (interop on latest) sees its packages, is
rebuilt with it, and two runs build a shared base once.

Each test runs a copy of the script in a scratch root with a requirements
file of its own, so the project's `.venvs/` are never touched, needs no
package index (PIP_NO_INDEX), and sees the free disk a stand-in `df`
reports, not the host's (CI's disk once had under 3 GB free)."""
import os
import shutil
import stat
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))


def _root(tmp_path, requirements, **others):
  """A scratch root holding the script, requirements/probe.txt and a
  requirements/NAME.txt for each of `others`."""
  (tmp_path / "scripts").mkdir(parents=True)
  shutil.copy(os.path.join(REPO, "scripts", "setup_env.sh"),
              tmp_path / "scripts")
  (tmp_path / "requirements").mkdir()
  for name, text in dict(others, probe=requirements).items():
    (tmp_path / "requirements" / f"{name}.txt").write_text(text)
  _fake_df(tmp_path, free_kib=100 * 1048576)
  return tmp_path


def _fake_df(root, free_kib):
  """Puts in ROOT/bin a `df -Pk` that reports FREE_KIB KiB available."""
  (root / "bin").mkdir(exist_ok=True)
  (root / "bin" / "df").write_text(
      "#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity "
      f"Mounted on'\necho '/dev/x 999999999 1 {free_kib} 1% /'\n")
  (root / "bin" / "df").chmod(stat.S_IRWXU)


def _command(root, name="probe"):
  env = dict(os.environ, PYTHON=sys.executable, PIP_NO_INDEX="1")
  env["PATH"] = f"{root / 'bin'}{os.pathsep}{env['PATH']}"
  return dict(args=["bash", str(root / "scripts" / "setup_env.sh"), name],
              env=env)


def _setup(root, name="probe"):
  return subprocess.run(**_command(root, name), capture_output=True,
                        text=True, timeout=300)


def test_too_little_disk_is_one_line_and_installs_nothing(tmp_path):
  root = _root(tmp_path / "root", "numpy\n")
  _fake_df(root, free_kib=1048576)  # 1 GiB
  result = _setup(root)
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


def _site_packages(python):
  return subprocess.run(
      [python, "-c", "import sysconfig; print(sysconfig.get_paths()"
       "['purelib'])"], capture_output=True, text=True,
      check=True).stdout.strip()


def test_an_environment_on_another_sees_its_packages_and_follows_it(
    tmp_path):
  """probe.txt includes base.txt ("-r base.txt"): probe and base built at
  once build base once; probe imports what base holds without a copy of its
  own; base rebuilt (its requirements changed) rebuilds probe."""
  # pip is in every venv: both install with no package index.
  root = _root(tmp_path, "-r base.txt\npip\n", base="pip\n")
  runs = [subprocess.Popen(**_command(root, name), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
          for name in ("probe", "base")]
  outs = [run.communicate(timeout=300) for run in runs]
  assert [run.returncode for run in runs] == [0, 0], outs
  venvs = root / ".venvs"
  assert [out.strip().splitlines()[-1] for out, _ in outs] == [
      str(venvs / "probe" / "bin" / "python"),
      str(venvs / "base" / "bin" / "python")]
  creating = "".join(err for _, err in outs).count(
      f"[setup] creating {venvs / 'base'} ")
  assert creating == 1, outs

  base_site = _site_packages(str(venvs / "base" / "bin" / "python"))
  with open(os.path.join(base_site, "probe_marker.py"), "w") as f:
    f.write("WHERE = 'base'\n")
  probe = str(venvs / "probe" / "bin" / "python")
  assert not os.path.exists(os.path.join(_site_packages(probe),
                                         "probe_marker.py"))
  seen = subprocess.run([probe, "-c", "import probe_marker; "
                         "print(probe_marker.WHERE)"], capture_output=True,
                        text=True)
  assert seen.stdout.strip() == "base", seen.stderr

  # Unchanged: reused. base's requirements changed: both rebuilt.
  (venvs / "probe" / "kept").write_text("")
  assert _setup(root).returncode == 0
  assert (venvs / "probe" / "kept").exists()
  (root / "requirements" / "base.txt").write_text("pip\n# changed\n")
  again = _setup(root)
  assert again.returncode == 0, again.stderr
  assert not (venvs / "probe" / "kept").exists()
  assert not os.path.exists(os.path.join(base_site, "probe_marker.py"))
