"""The `vistahop-mini` world: a fictional knowledge graph, its wiki corpus, 4K scenes with visual
anchors, and verified multi-hop tasks (single and fused chains) in arena and VistaArena formats."""

from .build import WORLD_NAME, WorldBuildError, build, generate

__all__ = ["WORLD_NAME", "WorldBuildError", "build", "generate"]
