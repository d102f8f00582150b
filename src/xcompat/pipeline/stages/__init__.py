"""The stages of ``xcompat run``, one module each, every one satisfying ``xcompat.pipeline.stage.Stage``.

Their order is the table in ``xcompat.pipeline.registry``.
"""
