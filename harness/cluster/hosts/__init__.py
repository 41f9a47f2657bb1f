"""Slurm on hosts deployed by Ansible: this machine or a head node over SSH."""
