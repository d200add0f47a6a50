"""xlnet-tf tests: one folder per package of xlnet/ (see tests/README)."""
