"""Policy assurance: proofs, test cases, coverage and static analysis.

The engine behind `router test` and `router check`.
"""
