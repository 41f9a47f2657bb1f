"""The processes of a run on the head node (the replay, the ordering agent, resubmission) and the
host watching them (progress, faults)."""
