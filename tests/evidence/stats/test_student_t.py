"""Student t quantiles: the printed tables, the series/expansion seam, bad arguments."""

from __future__ import annotations

import pytest

from evidence.stats import student_t


@pytest.mark.parametrize(
    ("confidence", "df", "table"),
    [(0.95, 1, 12.706), (0.95, 2, 4.303), (0.95, 4, 2.776), (0.95, 19, 2.093),
     (0.95, 120, 1.980), (0.99, 7, 3.499), (0.90, 3, 2.353), (0.95, 10**6, 1.960)],
)  # fmt: skip
def test_quantiles_match_the_printed_tables(confidence: float, df: int, table: float) -> None:
    assert student_t.quantile(confidence, df) == pytest.approx(table, abs=6e-4)


def test_the_quantile_inverts_the_probability() -> None:
    for df in (1, 2, 5, 8, 33, 300):
        t = student_t.quantile(0.95, df)
        assert student_t.two_sided_probability(t, df) == pytest.approx(0.95, abs=1e-12)


def test_the_expansion_takes_over_from_the_series_without_a_step() -> None:
    edge = student_t.SERIES_LIMIT
    series, expansion = student_t.quantile(0.95, edge), student_t.quantile(0.95, edge + 1)
    assert 0 < series - expansion < 1e-4  # t falls with df, smoothly across the seam


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="degrees of freedom"):
        student_t.two_sided_probability(1.0, 0)
    with pytest.raises(ValueError, match="confidence"):
        student_t.quantile(1.0, 5)
