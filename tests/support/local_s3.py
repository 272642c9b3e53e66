"""A local S3-compatible server (moto's ThreadedMotoServer) on 127.0.0.1, configured through the standard
AWS_* variables exactly as a user points the arena at MinIO or R2."""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import Iterator

import httpx
import pytest

VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")


@contextmanager
def local_s3(bucket: str) -> Iterator[str]:
    """Start the server (empty), set the AWS_* variables, create `bucket`; yields the endpoint URL."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    httpx.post(f"{endpoint}/moto-api/reset").raise_for_status()  # moto keeps buckets per process, not per server
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ENDPOINT_URL", endpoint)
        env.setenv("AWS_ACCESS_KEY_ID", "arena-test-access-key")
        env.setenv("AWS_SECRET_ACCESS_KEY", "arena-test-secret-key-do-not-log")
        env.setenv("AWS_REGION", "us-east-1")
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=bucket)
        try:
            yield endpoint
        finally:
            server.stop()


def object_keys(bucket: str) -> list[str]:
    import boto3

    listing = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"]).list_objects_v2(Bucket=bucket)
    return sorted(item["Key"] for item in listing.get("Contents", []))
