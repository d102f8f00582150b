"""Delivering reports to code forges (GitHub, GitLab) over their REST APIs."""
