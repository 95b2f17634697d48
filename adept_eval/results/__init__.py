"""The results layer: reading finished runs, reports, paired comparisons, leaderboards and
publishing to the Hugging Face Hub."""
