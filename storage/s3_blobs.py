"""The S3 (or MinIO) blob store, through boto3: blobs as objects ``<prefix>/<sha[:2]>/<sha>`` in one bucket."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any

from storage.blob_base import _CHUNK, _SHA256, BlobNotFoundError, BlobStore, check_address, sha256_bytes, sha256_file


class S3BlobStore(BlobStore):
    """Blobs as objects ``<prefix>/<sha[:2]>/<sha>`` in one bucket; ``endpoint_url`` points at MinIO or moto."""

    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str | None = None,
                 region: str | None = None, client: Any = None,
                 multipart_threshold: int = 64 * _CHUNK, multipart_chunksize: int = 16 * _CHUNK) -> None:
        import boto3
        from boto3.s3.transfer import TransferConfig

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client or boto3.client("s3", endpoint_url=endpoint_url, region_name=region)
        self.transfer = TransferConfig(multipart_threshold=multipart_threshold,
                                       multipart_chunksize=multipart_chunksize)
        self.uri = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._opened_with = {"endpoint_url": endpoint_url, "region": region,
                             "multipart_threshold": multipart_threshold, "multipart_chunksize": multipart_chunksize}

    def __reduce__(self) -> tuple[Any, ...]:
        # to a worker process: where the bucket is; the worker makes its own client (a boto3 client is not sent)
        return functools.partial(S3BlobStore, **self._opened_with), (self.bucket, self.prefix)

    def key_for(self, sha256: str) -> str:
        check_address(sha256)
        key = f"{sha256[:2]}/{sha256}"
        return f"{self.prefix}/{key}" if self.prefix else key

    def _upload(self, source: IO[bytes], sha256: str) -> str:
        if self.exists(sha256):
            return sha256
        # upload_fileobj switches to a multipart upload above the threshold and aborts it on any failure, so
        # the key appears only after CompleteMultipartUpload and a broken upload leaves nothing behind.
        self.client.upload_fileobj(source, self.bucket, self.key_for(sha256),
                                   ExtraArgs={"Metadata": {"sha256": sha256}}, Config=self.transfer)
        return sha256

    def put(self, data: bytes) -> str:
        import io

        return self._upload(io.BytesIO(data), sha256_bytes(data))

    def put_file(self, path: str | os.PathLike[str]) -> str:
        sha256 = sha256_file(path)
        with open(path, "rb") as handle:
            return self._upload(handle, sha256)

    def get(self, sha256: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key_for(sha256))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise BlobNotFoundError(sha256, self.uri) from None
            raise
        return response["Body"].read()

    def exists(self, sha256: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self.key_for(sha256))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def iter_addresses(self) -> Iterator[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=f"{self.prefix}/" if self.prefix else ""):
            for item in page.get("Contents", []):
                name = item["Key"].rsplit("/", 1)[-1]
                if _SHA256.match(name):
                    yield name

    def iter_ages(self) -> Iterator[tuple[str, datetime]]:
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=f"{self.prefix}/" if self.prefix else ""):
            for item in page.get("Contents", []):
                name = item["Key"].rsplit("/", 1)[-1]
                if _SHA256.match(name):
                    yield name, item["LastModified"]

    def delete(self, sha256: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.key_for(sha256))

    def delete_many(self, addresses: list[str]) -> None:
        """One request per 1,000 blobs (S3's DeleteObjects), not one each; a key S3 refuses to delete is an error
        naming it."""
        for start in range(0, len(addresses), 1000):
            keys = [{"Key": self.key_for(sha256)} for sha256 in addresses[start:start + 1000]]
            said = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
            if said.get("Errors"):
                first = said["Errors"][0]
                raise OSError(f"s3://{self.bucket}/{first.get('Key')}: not deleted ({first.get('Code')}: "
                              f"{first.get('Message')}); {len(said['Errors'])} refused in all")
