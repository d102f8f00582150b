"""The stages of a CI pipeline, each run by ``xcompat stage NAME`` in a job of its own.

The GitHub action and the GitLab template run one stage per job (the plan, then a build and
a test job per cell, the report and the gate over all of them); each stage is a module of
this package satisfying ``xcompat.pipeline.ci.step.CiStage``, and ``xcompat.pipeline.ci.table``
lists them. A stage reads its inputs (``CiInputs``: the action's inputs, by the same names)
and runs the xcompat commands of its job.
"""
