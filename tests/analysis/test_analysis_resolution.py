"""Resolution at a cursor: which names may come next, or None (no constraint)."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis_helpers import allowed_at, analysis_for

FILES = {
    "shop/__init__.py": "",
    "shop/base.py": '''
class Record:
    table = "records"

    def __init__(self, key, *, created=None):
        self.key = key
        self._created = created

    def save(self, force=False, *, retries=3):
        return True
''',
    "shop/models.py": '''
from .base import Record


class Item(Record):
    def __init__(self, key, price):
        super().__init__(key)
        self.price = price

    def discounted(self, rate):
        return self.price * (1 - rate)
''',
    "shop/util.py": '''
import os
from shop import models
from shop.models import Item as Product

TAX = 0.2


def total(items, tax=TAX, *, currency="EUR"):
    return sum(i.price for i in items)
''',
}


@pytest.fixture()
def ws(tmp_path: Path):
    return analysis_for(tmp_path, FILES), tmp_path


def _members(a, path, text):
    found = allowed_at(a, path, text)
    return set(found) if found is not None else None


def test_self_gives_members_of_the_class_and_bases_across_files(ws):
    a, root = ws
    text = FILES["shop/models.py"] + "\n    def show(self):\n        return self.|"
    names = _members(a, root / "shop/models.py", text)
    assert {"price", "discounted", "show", "key", "_created", "save", "table"} <= names
    assert "__init__" in names and "missing" not in names


def test_cls_in_a_classmethod(ws):
    a, root = ws
    text = FILES["shop/base.py"] + "\n    @classmethod\n    def build(cls):\n        return cls.|"
    names = _members(a, root / "shop/base.py", text)
    assert {"table", "save", "build", "mro"} <= names


def test_self_at_a_statement_start_is_unconstrained(ws):
    a, root = ws
    text = FILES["shop/models.py"] + "\n    def reset(self):\n        self.|"
    assert allowed_at(a, root / "shop/models.py", text) is None


def test_imported_module_and_class_attributes(ws):
    a, root = ws
    util = root / "shop/util.py"
    assert {"Item", "Record"} <= _members(a, util, FILES["shop/util.py"] + "x = models.|")
    assert {"save", "table", "discounted"} <= _members(a, util,
                                                       FILES["shop/util.py"] + "x = Product.|")
    assert "path" in _members(a, util, FILES["shop/util.py"] + "x = os.|")


def test_stdlib_module_attribute_prefix():
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        a = analysis_for(Path(tmp), {"m.py": ""})
        state_names = allowed_at(a, Path(tmp) / "m.py", "import os\nos.pa|")
        assert "path" in state_names and "getcwd" in state_names
        assert "join" in allowed_at(a, Path(tmp) / "m.py", "import os\nx = os.path.|")
        assert "dumps" in allowed_at(a, Path(tmp) / "m.py", "import json\njson.|")
        assert "OrderedDict" in allowed_at(a, Path(tmp) / "m.py", "from collections import |")


def test_from_import_and_import_give_module_names(ws):
    a, root = ws
    util = root / "shop/util.py"
    assert {"Record"} <= _members(a, util, "from shop.base import |")
    assert {"Record"} <= _members(a, util, "from .base import (\n    |")
    assert {"base", "models", "util"} <= _members(a, util, "from . import |")
    assert {"base", "models", "util"} <= _members(a, util, "from shop.|")
    assert {"shop", "os", "collections"} <= _members(a, util, "import |")
    assert {"shop", "os"} <= _members(a, util, "import sys, |")
    assert {"parse", "request"} <= _members(a, util, "import urllib.|")
    assert {"Item"} <= _members(a, util, "from shop.models import Item, |")


def test_from_import_offers_no_implicit_module_attribute(ws):
    """``from email.parser import __dict__``: the model's name was not one of the module's,
    and the mask left it the module's implicit attributes; no one imports those. ``m.``
    still offers them (``m.__file__``)."""
    a, root = ws
    util = root / "shop/util.py"
    names = _members(a, util, "from shop.base import |")
    assert "Record" in names and not names & {"__dict__", "__file__", "__doc__", "__name__"}
    assert "__file__" in _members(a, util, "import shop.base\nshop.base.|")


def test_keyword_arguments_of_known_functions(ws):
    a, root = ws
    util = root / "shop/util.py"
    text = FILES["shop/util.py"]
    assert _members(a, util, text + "total([], tax=1, |") == {"items", "currency"}
    assert _members(a, util, text + "Product('k', price=1, |") == {"key"}
    assert _members(a, util, text + "Product.save(p, force=True, |") == {"self", "retries"}
    assert _members(a, util, text + "total([],\n      tax=1,\n      |") == {"items", "currency"}
    # before any keyword a positional argument may come: no constraint
    assert allowed_at(a, util, text + "total(|") is None
    # **kwargs accepts anything
    assert allowed_at(a, util, "def f(**kw):\n    pass\nf(a=1, |") is None


def test_unresolvable_receivers_are_unconstrained(ws):
    a, root = ws
    util = root / "shop/util.py"
    for text in ("x = unknown.|", "x = foo().|", "items = []\nx = items.|", "import numpy_xyz\n"
                 "x = numpy_xyz.|", "x = 'a'.|", "x = 1.|", "s = '''\nos.|"):
        assert allowed_at(a, util, FILES["shop/util.py"] + text) is None, text


def test_local_variable_shadows_a_module(ws):
    a, root = ws
    text = "import os\n\ndef f(os):\n    return os.|"
    assert allowed_at(a, root / "shop/util.py", text) is None


def test_class_with_unknown_base_is_unconstrained(ws):
    a, root = ws
    text = "from somewhere_else import Mystery\n\nclass K(Mystery):\n    def f(self):\n" \
           "        return self.|"
    assert allowed_at(a, root / "shop/util.py", text) is None


def test_builtin_and_typing_bases(ws):
    a, root = ws
    text = "from typing import Generic, TypeVar\nT = TypeVar('T')\n\n" \
           "class Bag(dict, Generic[T]):\n    extra = 1\n\n    def f(self):\n        return self.|"
    names = _members(a, root / "shop/util.py", text)
    assert {"extra", "keys", "items", "f"} <= names


def test_module_renamed_is_followed_after_reindex(ws):
    a, root = ws
    (root / "shop/base.py").rename(root / "shop/records.py")
    a.index_file(root / "shop/base.py")                  # gone: removed
    a.index_file(root / "shop/records.py")
    util = root / "shop/util.py"
    assert "records" in _members(a, util, "from shop.|")
    assert "base" not in _members(a, util, "from shop.|")
