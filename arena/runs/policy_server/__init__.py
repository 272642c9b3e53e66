"""`arena serve`: a local OpenAI-compatible endpoint that plays a suite's scripted policy for the arena's agent
requests and answers its judge and summariser requests by rule (docs/serve.md).

`server` assembles it; `conversation` reads an agent request back into its episode, `agent_role` plays the policy's
turn on it, `helper_roles` answers the judges and the web summariser, `usage` counts tokens.
"""

from .server import PolicyServer, policies

__all__ = ["PolicyServer", "policies"]
