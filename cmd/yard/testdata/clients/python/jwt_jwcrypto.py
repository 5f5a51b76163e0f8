"""jwcrypto (python3-jwcrypto): verify yard's tokens with a JWKSet read
from /.well-known/jwks.json, as jwcrypto's documentation shows
(jwk.JWKSet.from_json, jwt.JWT(jwt=..., key=keyset))."""

import json

import requests
from jwcrypto import jwk, jws, jwt

from yardtest import BASE, PASSWORD, TOKEN_ALG, USER, done, expect, expect_status, run


def keyset():
    r = requests.get(BASE + "/.well-known/jwks.json")
    expect_status(r, 200)
    return jwk.JWKSet.from_json(r.text)


def verify(token):
    """The token's claims and header, once its signature verified."""
    t = jwt.JWT(jwt=token, key=keyset(), algs=["EdDSA", "ES256"])
    return json.loads(t.claims), json.loads(t.header)


def pk_token():
    r = requests.post(BASE + "/auth/pk-token", json={"username": USER, "password": PASSWORD})
    expect_status(r, 200)
    token = r.json()["token"]
    claims, _ = verify(token)
    expect(claims["name"] == USER, "claims %s" % claims)
    head, body, sig = token.split(".")
    try:
        verify(".".join([head, body, ("A" if sig[0] != "A" else "B") + sig[1:]]))
        raise AssertionError("a forged signature was accepted")
    except jws.InvalidJWSSignature:
        pass


def access_token():
    r = requests.post(BASE + "/auth/login", json={"username": USER, "password": PASSWORD})
    expect_status(r, 200)
    token = r.json()["access_token"]
    claims, header = verify(token)
    expect(claims["iss"] == BASE and claims["token_use"] == "access", "claims %s" % claims)
    expect(header["alg"] == TOKEN_ALG, "alg %s, want %s" % (header["alg"], TOKEN_ALG))


run("jwcrypto", "jwcrypto", "Public-key token", "POST /auth/pk-token, JWKSet.from_json + jwt.JWT (EdDSA); a forged signature refused", pk_token)
run("jwcrypto", "jwcrypto", "Token pair (JWT)", "POST /auth/login with serve --token-alg %s: the access token verified with the JWKSet" % TOKEN_ALG,
    access_token)
done()
