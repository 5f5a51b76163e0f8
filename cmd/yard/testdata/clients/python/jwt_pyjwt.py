"""PyJWT (python3-jwt): verify yard's tokens with PyJWKClient against
/.well-known/jwks.json, as PyJWT's documentation ("Retrieve RSA signing
keys from a JWKS endpoint") shows, then use them."""

import jwt
import requests

from yardtest import BASE, DOG, PASSWORD, TOKEN_ALG, USER, done, expect, expect_status, run

jwks = jwt.PyJWKClient(BASE + "/.well-known/jwks.json")


def verify(token, **kw):
    key = jwks.get_signing_key_from_jwt(token)
    return jwt.decode(token, key.key, algorithms=["EdDSA", "ES256"], **kw)


def pk_token():
    r = requests.post(BASE + "/auth/pk-token", json={"username": USER, "password": PASSWORD})
    expect_status(r, 200)
    token = r.json()["token"]
    claims = verify(token)
    expect(claims["name"] == USER and claims["exp"] > claims["iat"], "claims %s" % claims)
    # A token changed by a single character is refused by the library.
    head, body, sig = token.split(".")
    forged = ".".join([head, body, ("A" if sig[0] != "A" else "B") + sig[1:]])
    try:
        verify(forged)
        raise AssertionError("a forged signature was accepted")
    except jwt.InvalidSignatureError:
        pass
    expect_status(requests.get(BASE + DOG, headers={"Authorization": "Bearer " + token}), 200)


def access_token():
    r = requests.post(BASE + "/auth/login", json={"username": USER, "password": PASSWORD})
    expect_status(r, 200)
    pair = r.json()
    claims = verify(pair["access_token"], issuer=BASE)
    expect(claims["token_use"] == "access" and claims["name"] == USER, "claims %s" % claims)
    expect_status(requests.get(BASE + DOG, headers={"Authorization": "Bearer " + pair["access_token"]}), 200)
    # The refreshed pair's access token verifies the same way.
    r = requests.post(BASE + "/auth/refresh", headers={"Authorization": "Bearer " + pair["refresh_token"]})
    expect_status(r, 200)
    verify(r.json()["access_token"], issuer=BASE)
    alg = jwt.get_unverified_header(pair["access_token"])["alg"]
    expect(alg == TOKEN_ALG, "alg %s, want %s" % (alg, TOKEN_ALG))


run("PyJWT", "PyJWT", "Public-key token", "POST /auth/pk-token, PyJWKClient + jwt.decode (EdDSA), a forged signature refused, "
    "then GET with the token", pk_token)
run("PyJWT", "PyJWT", "Token pair (JWT)", "POST /auth/login with serve --token-alg %s: the access token verified with "
    "PyJWKClient (issuer checked) and used; so is the one of POST /auth/refresh" % TOKEN_ALG, access_token)
done()
