"""Policy assurance: proofs, test cases, coverage and static analysis (`router test`, `router check`)."""
