"""Image hosts: publish an image in context (a task image or a crop) at a URL a Lens provider can fetch.

Google Lens only takes an image URL, so a live reverse search of a crop needs the crop on the web first.
`--tool-option image_host=...` picks the host:

- `s3://BUCKET/PREFIX`: any S3-compatible store (AWS S3, MinIO, Cloudflare R2, ...), configured by the
  standard variables `AWS_ENDPOINT_URL` (omit for AWS), `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
  `AWS_REGION`. The object is private; the provider gets a presigned GET URL valid for
  `image_host_expires` seconds (default 3600). Needs `boto3` (`pip install 'arena[live]'`).
- `https://PUBLIC/BASE` with `image_host_dir=DIR`: the image is written to `DIR` and `BASE` must serve
  that directory (a web server or CDN the user runs).

Objects are named by content hash (`<sha256>.<ext>`), so an image is stored once however many
episodes search it; an object already in the bucket or directory is not uploaded again. URLs are
never recorded: cassettes key a reverse search by the image's hash, and `scrub` masks presigned
signatures in messages.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, urlsplit

from arena.core.tool import ToolError

from arena.tools.keypool import scrub
from arena.tools.web_errors import WebConfigError

CONTENT_TYPES = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp",
                 "gif": "image/gif", "bmp": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff"}


class ImageHost(Protocol):
    """Publishes bytes under a content-addressed name and returns a URL that serves them."""

    name: str

    async def publish(self, digest: str, data: bytes, ext: str) -> str: ...


class S3Host:
    """A private bucket and presigned GET URLs (boto3, configured from the standard AWS_* variables)."""

    name = "s3"

    def __init__(self, bucket: str, prefix: str = "", *, expires: int = 3600, client=None):
        if not bucket:
            raise WebConfigError("image_host=s3://BUCKET/PREFIX needs a bucket name")
        self.bucket, self.prefix, self.expires = bucket, prefix.strip("/"), expires
        self._client = client
        self.uploads = 0

    def client(self):
        if self._client is None:
            try:
                import boto3
            except ImportError:
                raise WebConfigError("image_host=s3://... needs boto3: pip install 'arena[live]'") from None
            from botocore.config import Config

            self._client = boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None,
                                        config=Config(signature_version="s3v4"))
        return self._client

    def key(self, digest: str, ext: str) -> str:
        return f"{self.prefix}/{digest}.{ext}" if self.prefix else f"{digest}.{ext}"

    def _publish(self, digest: str, data: bytes, ext: str) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        client, key = self.client(), self.key(digest, ext)
        where = f"s3://{self.bucket}/{key}"
        try:
            try:
                client.head_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                    raise
                client.put_object(Bucket=self.bucket, Key=key, Body=data,
                                  ContentType=CONTENT_TYPES.get(ext, "application/octet-stream"))
                self.uploads += 1
            return client.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": key},
                                                 ExpiresIn=self.expires)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise ToolError(f"the image host refused {where}: {error.get('Code', '?')}: "
                            f"{scrub(str(error.get('Message', '')))}") from None
        except BotoCoreError as exc:
            raise ToolError(f"the image host cannot store {where}: {type(exc).__name__}: {scrub(str(exc))}") \
                from None

    async def publish(self, digest: str, data: bytes, ext: str) -> str:
        return await asyncio.to_thread(self._publish, digest, data, ext)


class DirHost:
    """A local directory served by the user at a public base URL."""

    name = "dir"

    def __init__(self, base_url: str, directory: str | Path):
        if not directory:
            raise WebConfigError(f"image_host={scrub(base_url)} needs image_host_dir=DIR, the directory that URL "
                                 "serves")
        self.base_url, self.directory = base_url.rstrip("/"), Path(directory)
        self.uploads = 0

    def _publish(self, digest: str, data: bytes, ext: str) -> str:
        name = f"{digest}.{ext}"
        target = self.directory / name
        if not target.exists():
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-")
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.chmod(tmp, 0o644)
                os.replace(tmp, target)
            except OSError as exc:
                raise ToolError(f"the image host cannot write {target}: {exc.strerror or exc}") from None
            self.uploads += 1
        return f"{self.base_url}/{quote(name)}"

    async def publish(self, digest: str, data: bytes, ext: str) -> str:
        return await asyncio.to_thread(self._publish, digest, data, ext)


def image_host(spec: str | None, *, directory: str | None = None, expires: int = 3600) -> ImageHost:
    """The host named by `image_host` (and `image_host_dir`); WebConfigError with the accepted forms."""
    parts = urlsplit(spec or "")
    if parts.scheme == "s3":
        return S3Host(parts.netloc, parts.path, expires=expires)
    if parts.scheme in ("http", "https") and parts.netloc:
        return DirHost(spec or "", directory or "")
    raise WebConfigError("image_search=live needs an image host: --tool-option image_host=s3://BUCKET/PREFIX "
                         "(S3-compatible, AWS_* variables) or image_host=https://PUBLIC/BASE with "
                         f"image_host_dir=DIR; got {scrub(spec) if spec else 'none'}")
