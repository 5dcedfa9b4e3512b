"""memdir.core.paths: one canonical spelling per entry, and no way out of the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdir.core.errors import InputValidationError, InvalidPathError
from memdir.core.paths import disk_stem, is_within, normalize_path, resolve_in_root


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("concept/ruby/classes", "concept/ruby/classes.md"),
        ("concept/ruby/classes.md", "concept/ruby/classes.md"),
        ("memory://concept/ruby/classes.md", "concept/ruby/classes.md"),
        ("memory://concept/ruby/classes", "concept/ruby/classes.md"),
        ("concept//ruby///classes", "concept/ruby/classes.md"),
        ("concept/ruby/classes/", "concept/ruby/classes.md"),
        ("fact/api-v2.1_notes", "fact/api-v2.1_notes.md"),
        ("single", "single.md"),
    ],
)
def test_accepted_spellings_normalise_to_one_path(spelling: str, canonical: str) -> None:
    assert normalize_path(spelling) == canonical


def test_with_and_without_md_suffix_name_the_same_entry() -> None:
    assert normalize_path("x") == normalize_path("x.md") == "x.md"


def test_normalisation_is_idempotent() -> None:
    path = normalize_path("memory://concept//café/x/")
    assert normalize_path(path) == path


def test_unicode_is_nfc_normalised() -> None:
    decomposed = "concept/cafe\u0301"
    composed = "concept/caf\u00e9"
    assert normalize_path(decomposed) == normalize_path(composed) == "concept/caf\u00e9.md"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("memory://", "empty"),
        ("/etc/passwd", "absolute"),
        ("//etc/passwd", "absolute"),
        ("../secrets/api-key", "'..'"),
        ("concept/../../x", "'..'"),
        ("concept/./x", "'.'"),
        ("..", "'..'"),
        ("concept/ x", "whitespace"),
        ("concept /x", "whitespace"),
        (" fact/space.md", "starts or ends with whitespace"),
        ("fact/space.md ", "starts or ends with whitespace"),
        ("memory:// fact/space.md", "whitespace"),
        (".memdir/index", "hidden"),
        ("concept/.secret", "hidden"),
        (".md", "hidden"),
        ("concept\\x", "backslash"),
        ("concept/a<b", "< > :"),
        ("concept/a>b", "< > :"),
        ("c:/x", "< > :"),
        ('concept/"x"', "< > :"),
        ("concept/a|b", "< > :"),
        ("concept/a?", "< > :"),
        ("concept/*", "< > :"),
        ("concept/a\x00b", "control"),
        ("concept/a\nb", "control"),
        ("concept/a\tb", "control"),
        ("concept/a\x7fb", "control"),
        ("concept/evil\u202egpj.md", "invisible"),  # right-to-left override
        ("concept/a\u200bb", "invisible"),  # zero-width space
        ("concept/a\u2028b", "control"),  # line separator
        ("fact/a.md/b", "ends in an entry file's suffix"),  # would collide with the entry fact/a
        ("fact/a.yml/b", "ends in an entry file's suffix"),
        ("fact/A.MD/b", "ends in an entry file's suffix"),
        ("concept/" + "a" * 300, "longer"),
    ],
)
def test_invalid_paths_are_refused_with_a_reason(path: str, reason: str) -> None:
    with pytest.raises(InvalidPathError) as excinfo:
        normalize_path(path)
    error = excinfo.value
    assert reason in error.message
    assert error.hint  # every refusal says how to fix it
    assert isinstance(error, InputValidationError)


def test_backslash_message_explains_the_separator() -> None:
    with pytest.raises(InvalidPathError) as excinfo:
        normalize_path("concept\\ruby\\classes")
    assert "backslash" in excinfo.value.message
    assert "'/'" in excinfo.value.hint


def test_control_characters_are_shown_escaped() -> None:
    with pytest.raises(InvalidPathError) as excinfo:
        normalize_path("a\nb")
    assert "\n" not in excinfo.value.message
    assert "\\n" in excinfo.value.message


def test_non_string_is_refused() -> None:
    with pytest.raises(InvalidPathError):
        normalize_path(42)  # type: ignore[arg-type]


def test_disk_stem_drops_only_the_suffix() -> None:
    assert disk_stem("concept/ruby/classes.md") == "concept/ruby/classes"
    assert disk_stem("a.md.md") == "a.md"


def test_resolve_in_root_maps_to_the_md_file(tmp_path: Path) -> None:
    assert resolve_in_root(tmp_path, "concept/x.md") == tmp_path / "concept" / "x.md"


def test_resolve_in_root_refuses_a_symlinked_folder_leading_out(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidPathError) as excinfo:
        resolve_in_root(root, "link/x.md")
    assert "outside the memory root" in excinfo.value.message


def test_resolve_in_root_refuses_a_symlinked_file_leading_out(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.md").write_text("secret")
    (root / "x.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(InvalidPathError):
        resolve_in_root(root, "x.md")


def test_resolve_in_root_allows_symlinks_that_stay_inside(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert resolve_in_root(tmp_path, "alias/x.md") == tmp_path / "alias" / "x.md"


def test_is_within_does_not_confuse_sibling_prefixes(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root-evil").mkdir()
    assert is_within(tmp_path / "root", tmp_path / "root" / "x")
    assert not is_within(tmp_path / "root", tmp_path / "root-evil" / "x")


# --------------------------------------------------------------------------- property test


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root holding a symlink to a folder outside it (``escape``) and one inside (``alias``)."""
    base = tmp_path_factory.mktemp("paths")
    root, outside = base / "root", base / "outside"
    (root / "concept").mkdir(parents=True)
    outside.mkdir()
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "concept" / "up").symlink_to(base, target_is_directory=True)
    (root / "alias").symlink_to(root / "concept", target_is_directory=True)
    return root


_pieces = st.sampled_from(
    ["..", ".", "/", "//", "\\", "memory://", "escape", "alias", "concept", "up", " ", "~", "%2e%2e", "\x00", ".md"]
)
_path_text = st.one_of(
    st.text(max_size=60),
    st.lists(st.one_of(_pieces, st.text(max_size=8)), max_size=8).map("".join),
    st.lists(st.one_of(_pieces, st.text(alphabet="ab.", max_size=4)), max_size=8).map("/".join),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_path_text)
def test_any_accepted_path_stays_inside_the_root(sandbox: Path, text: str) -> None:
    try:
        logical = normalize_path(text)
    except InvalidPathError:
        return
    assert logical.endswith(".md")
    assert not logical.startswith("/")
    assert ".." not in logical.split("/")
    try:
        target = resolve_in_root(sandbox, logical)
    except InvalidPathError:
        return  # refused: it led through a symlink out of the root
    real_root = os.path.realpath(sandbox)
    assert os.path.realpath(target).startswith(real_root + os.sep)


def test_paths_through_an_escaping_symlink_are_always_refused(sandbox: Path) -> None:
    for text in ("escape/x", "escape/deep/er/x.md", "concept/up/outside/x", "alias/up/x"):
        with pytest.raises(InvalidPathError):
            resolve_in_root(sandbox, normalize_path(text))


def test_lone_surrogate_is_refused_cleanly():
    with pytest.raises(InvalidPathError, match="not valid Unicode"):
        normalize_path("concept/x\ud800")


def test_every_file_of_the_entry_must_fit_a_name():
    """255 bytes per file name: '.yml' and '.emb' are one byte longer than '.md'."""
    assert normalize_path("concept/" + "a" * 251) == "concept/" + "a" * 251 + ".md"
    for name in ("a" * 252, "a" * 252 + ".md", "a" * 254):
        with pytest.raises(InvalidPathError, match="longer than 251 bytes"):
            normalize_path("concept/" + name)


def test_the_md_suffix_and_the_scheme_are_matched_in_any_case():
    assert normalize_path("fact/p6.MD") == normalize_path("MEMORY://fact/p6") == "fact/p6.md"
    with pytest.raises(InvalidPathError, match="only one 'memory://' prefix"):
        normalize_path("memory://memory://fact/x")
