"""One cache root: the native builds, the datastores and drafting's timings all live under
``user_cache.cache_folder``, in the folders they had before it (so existing caches stay valid)."""
from pathlib import Path

from inkling.completion.drafting.datastore import cache_dir
from inkling.runtime.native_build import cache_root
from inkling.runtime.user_cache import cache_folder


def test_every_cache_lives_under_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("INKLING_NATIVE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_root() == tmp_path / "inkling" / "native" == cache_folder("native")
    assert cache_dir() == tmp_path / "inkling" / "datastore" == cache_folder("datastore")


def test_without_xdg_cache_home_the_root_is_the_home_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("INKLING_NATIVE_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "inkling" / "native"
    assert cache_dir() == tmp_path / ".cache" / "inkling" / "datastore"


def test_the_native_folder_may_still_be_named_on_its_own(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("INKLING_NATIVE_CACHE", str(tmp_path / "builds"))
    assert cache_root() == tmp_path / "builds"
    assert cache_dir() == tmp_path / "xdg" / "inkling" / "datastore"
    assert Path(cache_folder("drafting")).parent == tmp_path / "xdg" / "inkling"
