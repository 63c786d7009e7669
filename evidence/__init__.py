"""What people read and what auditors check: statistics, the comparison, the result card,
the HTML report, the bundle and its seal, the audit and recorded reviews, all read from
the campaign folder."""
