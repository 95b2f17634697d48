"""The scoring layer: statistics, the listeners that answer ADEPT's questions, graded
prosody-transfer figures and the per-question records aggregation reads."""
