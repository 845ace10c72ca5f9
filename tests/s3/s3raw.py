"""s3raw.py: a raw S3 request signed with Signature V4 by botocore's own
signer, for the checks that send what boto3's API would not (malformed
bodies, bad headers) to an endpoint that checks keys and owners. The
test scripts in this folder import it."""
import urllib.error
import urllib.request

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def signed(s3_url, method, path, body=b"", headers=None, key=None, secret=None,
           region="us-east-1"):
    """(status, body text, response headers) of METHOD s3_url+path signed
    with key/secret (unsigned when key is None)."""
    h = dict(headers or {})
    url = s3_url + path
    if key is not None:
        req = AWSRequest(method=method, url=url, data=body, headers=h)
        S3SigV4Auth(Credentials(key, secret), "s3", region).add_auth(req)
        h = dict(req.headers.items())
    r = urllib.request.Request(url, data=body, method=method, headers=h)
    try:
        with urllib.request.urlopen(r) as resp:
            return resp.status, resp.read().decode(), dict(resp.headers.items())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), dict(e.headers.items())
