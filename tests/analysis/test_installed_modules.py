"""The monitor's installed packages are the environment's, not the folders the process happens to
have on ``sys.path`` (its working folder, a script's folder): otherwise suggestions after
``import`` would depend on where and how inkling was started."""
import subprocess
import sys
import textwrap


def test_installed_modules_ignore_the_working_folder_and_inserted_paths(tmp_path):
    cwd, inserted, env_path = tmp_path / "cwd", tmp_path / "inserted", tmp_path / "env_path"
    for folder, name in ((cwd, "zz_in_cwd"), (inserted, "zz_inserted"), (env_path, "zz_on_path")):
        folder.mkdir()
        (folder / f"{name}.py").write_text("X = 1\n")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(inserted)!r})
        from inkling.analysis.library_symbols import LibrarySymbols
        from inkling.analysis.stdlib_modules import StdlibModules
        names = LibrarySymbols(StdlibModules(), None, 8).installed()
        print(sorted(n for n in names if n.startswith("zz_")), "numpy" in names)
    """)
    run = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True,
                         env={"PYTHONPATH": str(env_path), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["['zz_on_path']", "True"], run.stdout
