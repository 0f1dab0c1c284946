"""ApiVersions (18), v0-v4: the version ranges of every registered handler; from v3 the supported and
finalized feature levels (KIP-584, changed by UpdateFeatures). A single node leaves the feature tags out (its
tagged-field section stays empty, as notebook 01 shows) until UpdateFeatures changes a level; a cluster
(``nodes`` > 1), where the cluster administration APIs live, always reports them.

The KIP-511 fallback (a request in a version the broker does not speak gets a v0 body with
UNSUPPORTED_VERSION and the ranges) happens in the dispatcher, before the body is decoded; see
``dispatch.api_versions_fallback``.
"""
from __future__ import annotations

from kafkalab.protocol import ApiKey

from ..controls.cluster import SUPPORTED_FEATURES
from .base import Handler


def advertised(registry) -> list[dict]:
    return [{"api_key": h.api_key, "min_version": h.min_version, "max_version": h.max_version}
            for _, h in sorted(registry.items())]


def handle(ctx, body: dict) -> dict:
    answer = {"error_code": 0, "api_keys": advertised(ctx.registry), "throttle_time_ms": 0}
    cluster = ctx.state.cluster
    if cluster.size > 1 or cluster.features_epoch > 0:
        answer.update(supported_features=[{"name": n, "min_version": lo, "max_version": hi}
                                          for n, (lo, hi) in SUPPORTED_FEATURES.items()],
                      finalized_features_epoch=cluster.features_epoch,
                      finalized_features=[{"name": n, "max_version_level": level, "min_version_level": level}
                                          for n, level in cluster.features.items()])
    return answer


HANDLER = Handler(ApiKey.API_VERSIONS, 0, 4, handle)
