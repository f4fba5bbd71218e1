"""The bounds of one run: documented defaults, sizes as people write them."""

from __future__ import annotations

from harness.core import limits
from harness.core.run import Run


def test_documented_defaults() -> None:
    defaults = limits.DEFAULT
    assert (defaults.file_bytes, defaults.output_bytes, defaults.memory_bytes) == (
        16 * 1024 * 1024,
        256 * 1024 * 1024,
        4 * 1024 * 1024 * 1024,
    )
    assert limits.Limits() == defaults


def test_sizes_parse_as_bytes_or_binary_units() -> None:
    assert limits.parse_size(1000) == 1000
    assert limits.parse_size("1000") == 1000
    assert limits.parse_size("512k") == 512 * 1024
    assert limits.parse_size("64MiB") == 64 * 1024 * 1024
    assert limits.parse_size("4 GiB") == 4 * 1024**3
    assert limits.parse_size("2G") == 2 * 1024**3
    assert limits.parse_size(0) == 0
    for bad in (-1, True, 1.5, "lots", "5 TB", None):
        assert limits.parse_size(bad) is None


def test_human_sizes_name_a_bound_as_written() -> None:
    assert limits.human(16 * 1024 * 1024) == "16 MiB"
    assert limits.human(4 * 1024**3) == "4 GiB"
    assert limits.human(300 * 1024) == "300 KiB"
    assert limits.human(20 * 1024 * 1024 + 1) == "20.0 MiB"
    assert limits.human(12) == "12 bytes"


def test_apply_sets_the_run_bounds() -> None:
    with Run().entered():
        limits.apply(limits.Limits(file_bytes=10))
        assert limits.current().file_bytes == 10
        with Run().entered():  # another run: the defaults until it applies its own
            assert limits.current() == limits.DEFAULT
    assert limits.current() == limits.DEFAULT  # outside any run
    limits.apply(limits.Limits(file_bytes=10))  # outside a run: nothing to set
    assert limits.current() == limits.DEFAULT
