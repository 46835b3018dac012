"""Reports: the contract report, the drift report, their files, and explanations."""
