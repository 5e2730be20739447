"""`router bench`: synthetic platforms planned through the real pipeline, with baselines."""
