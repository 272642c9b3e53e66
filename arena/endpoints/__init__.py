"""The model-server client shared by agents, judges and tools: one OpenAI-compatible request path (orjson bodies
over pooled httpx), error classes, retries, and redaction of credentials in URLs and messages.

It sits between the core and the packages that call models: `agents, judges, tools -> endpoints -> arena`.
"""
