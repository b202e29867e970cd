#!/bin/sh
# The wheels the GPU machine lacks (it has torch, transformers, tokenizers, safetensors,
# numpy, tqdm, attrs; nothing can be downloaded there): fetched here into .gpu_wheels/
# (ignored by git; the device call carries it), for its Python 3.12 on x86-64 Linux.
set -e
cd "$(dirname "$0")/.."
grep -qx '/.gpu_wheels/' .git/info/exclude 2>/dev/null || echo /.gpu_wheels/ >> .git/info/exclude
python3 -m pip download --quiet --dest .gpu_wheels --only-binary=:all: --no-deps \
    --python-version 3.12 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux_2_28_x86_64 --platform any \
    pygls lsprotocol cattrs watchdog pathspec tree-sitter tree-sitter-python \
    tree-sitter-javascript tree-sitter-typescript tree-sitter-go tree-sitter-rust \
    tree-sitter-java
du -sh .gpu_wheels
