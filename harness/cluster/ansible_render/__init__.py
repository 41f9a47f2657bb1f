"""What ``harness cluster render-ansible`` writes for the playbook."""
