"""The package as a user installs it: its version, a stripped native
module, and stubs that mypy --strict accepts for README's examples and
that catch a wrong argument type. README's examples run."""

import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import dendro_wire
from streams import ROOT, SAMPLE

README = ROOT / "python" / "README.md"
# The pages a user copies Python from: the package's README, and the
# repository README's `## From Python`.
PAGES = [README, ROOT / "README.md"]


def readme_examples(page=README):
    """Every ```python block of a page, in order (of the repository README,
    those of its `## From Python`)."""
    text = page.read_text()
    if page != README:
        text = text.split("\n## From Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = text.split("```python\n")[1:]
    assert blocks, f"{page} shows no Python"
    return [b.split("\n```", 1)[0] + "\n" for b in blocks]


def test_the_version_is_the_crates():
    from importlib.metadata import version

    cargo = (ROOT / "Cargo.toml").read_text()
    workspace = cargo.split("[workspace.package]", 1)[1]
    crate = workspace.split('version = "', 1)[1].split('"', 1)[0]
    assert dendro_wire.__version__ == crate == version("dendro-wire")


def elf_sections(path):
    """The names of an ELF64 little-endian file's sections."""
    data = Path(path).read_bytes()
    assert data[:6] == b"\x7fELF\x02\x01"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [data[shoff + i * shentsize : shoff + (i + 1) * shentsize] for i in range(shnum)]
    strtab_off, = struct.unpack_from("<Q", headers[shstrndx], 0x18)
    names = []
    for h in headers:
        name, = struct.unpack_from("<I", h, 0)
        end = data.index(b"\0", strtab_off + name)
        names.append(data[strtab_off + name : end].decode())
    return names


@pytest.mark.skipif(sys.platform != "linux", reason="an ELF module")
def test_the_native_module_is_stripped():
    module = dendro_wire._native.__file__
    sections = elf_sections(module)
    assert ".dynsym" in sections
    assert ".symtab" not in sections and not any(s.startswith(".debug") for s in sections)
    assert os.path.getsize(module) < 4_000_000


def test_the_package_is_typed():
    package = Path(dendro_wire.__file__).parent
    assert (package / "py.typed").exists() and (package / "_native.pyi").exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_readmes_examples_run(tmp_path, monkeypatch, page):
    pytest.importorskip("pandas")
    shutil.copy(SAMPLE, tmp_path / "capture.dwr")
    monkeypatch.chdir(tmp_path)
    scope = {}
    for block in readme_examples(page):
        exec(compile(block, str(page), "exec"), scope)


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    """One cache for every run here: numpy's stubs are read once."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(tmp_path, cache, code):
    pytest.importorskip("mypy")
    path = tmp_path / "example.py"
    path.write_text(code)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(path)],
        capture_output=True, text=True, cwd=tmp_path,
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_mypy_strict_accepts_the_readmes_examples(tmp_path, mypy_cache, page):
    out = mypy(tmp_path, mypy_cache, "".join(readme_examples(page)))
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("wrong, said", [
    ("dendro_wire.read(42)", 'Argument 1 to "read" has incompatible type "int"'),
    ("dendro_wire.read([1, 2, 3])", 'Argument 1 to "read" has incompatible type "list[int]"'),
    ('dendro_wire.read("capture.dwr", cut_ok="yes")', 'Argument "cut_ok" to "read"'),
    ('dendro_wire.read("capture.dwr").rows(1.5)', 'Argument 1 to "rows" of "Stream"'),
    ('dendro_wire.iter_batches("capture.dwr", rows="many")', 'Argument "rows" to "iter_batches"'),
    ('n: str = len(dendro_wire.read("capture.dwr").rows(0))', "Incompatible types in assignment"),
])
def test_mypy_strict_catches_a_wrong_type(tmp_path, mypy_cache, wrong, said):
    out = mypy(tmp_path, mypy_cache, f"import dendro_wire\n\n{wrong}\n")
    assert out.returncode == 1 and said in out.stdout, out.stdout + out.stderr
