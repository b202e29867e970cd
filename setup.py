"""Which packages the wheel holds: every package under inkling's top-level folders,
found rather than listed, so that no subpackage can be left out. Everything else about
the build is in pyproject.toml.

The folders lie at the repository's top level (lsp/, completion/, ...) and install as
inkling.lsp, inkling.completion, ...; scripts/check_install.sh checks the built wheel.
"""
from setuptools import find_packages, setup

TOP = ("cli", "training", "evaluation", "lsp", "completion", "analysis", "cache", "runtime",
       "models")

setup(
    packages=[f"inkling.{name}" for top in TOP
              for name in (top, *(f"{top}.{sub}" for sub in find_packages(top)))],
    package_dir={f"inkling.{top}": top for top in TOP},
)
