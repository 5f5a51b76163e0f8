"""requests-oauthlib (python3-requests-oauthlib): the OAuth 1.0a
three-legged flow with OAuth1Session, as its documentation's "OAuth 1
Workflow" shows, with the protocol parameters in each of the three places
of RFC 5849 §3.5 (signature_type AUTH_HEADER, BODY, QUERY)."""

import os

import requests
from oauthlib.oauth1 import (SIGNATURE_HMAC_SHA1, SIGNATURE_HMAC_SHA256, SIGNATURE_PLAINTEXT, SIGNATURE_TYPE_AUTH_HEADER,
                             SIGNATURE_TYPE_BODY, SIGNATURE_TYPE_QUERY)
from requests_oauthlib import OAuth1Session

from yardtest import BASE, DOG, PASSWORD, USER, Browser, done, expect, expect_status, need, run

KEY = need("YARD_CONSUMER_KEY")
SECRET = need("YARD_CONSUMER_SECRET")
# The callback the consumer was registered with (any, for a consumer
# registered without one); the flow reads the verifier from it.
CALLBACK = os.environ.get("YARD_CONSUMER_CALLBACK", "https://client.example/callback")

browser = Browser()


def three_legged(signature_type, method):
    """Request token, authorisation by the user, access token: returns an
    OAuth1Session holding the access token."""
    oauth = OAuth1Session(KEY, client_secret=SECRET, callback_uri=CALLBACK + "?state=1",
                          signature_type=signature_type, signature_method=method)
    rt = oauth.fetch_request_token(BASE + "/oauth/request_token")
    expect(rt.get("oauth_callback_confirmed") == "true", "request token: %s" % rt)
    back = browser.sign_in_and_allow(oauth.authorization_url(BASE + "/oauth/authorize"))
    expect(back.startswith(CALLBACK + "?"), "callback %s" % back)
    verifier = oauth.parse_authorization_response(back)
    expect(verifier.get("oauth_token") == rt["oauth_token"], "callback token %s" % verifier)
    at = oauth.fetch_access_token(BASE + "/oauth/access_token")
    expect(at.get("oauth_token", "").startswith("at_"), "access token: %s" % at)
    return oauth


def header(method):
    def flow():
        oauth = three_legged(SIGNATURE_TYPE_AUTH_HEADER, method)
        r = oauth.get(BASE + DOG, params={"fields": "all"})
        expect_status(r, 200)
        expect(r.request.headers["Authorization"].startswith(b"OAuth "), "not signed in the header")
        r = oauth.post(BASE + "/v1/dogs", json={"name": "Pip", "email": "pip@example.org"})
        expect_status(r, 201)
        # A consumer that changes the request after signing it is refused.
        req = requests.Request("GET", BASE + DOG, auth=oauth.auth).prepare()
        req.prepare_url(BASE + DOG, {"fields": "all"})
        s = requests.Session()
        r = s.send(req, **s.merge_environment_settings(req.url, {}, None, None, None))
        expect_status(r, 401)
        expect('oauth_problem="signature_invalid"' in r.headers.get("WWW-Authenticate", ""), "no signature_invalid: %s" % r.headers)
        # The problem body shows the base string the server computed: with
        # the query the client did not sign (docs/clients.md).
        base = r.json().get("oauth_signature_base_string", "")
        expect(base.startswith("GET&https%3A%2F%2Flocalhost") and "fields%3Dall" in base, "base string %r" % base)
    return flow


def body():
    oauth = three_legged(SIGNATURE_TYPE_BODY, SIGNATURE_HMAC_SHA1)
    # GET cannot carry a body (oauthlib refuses): the protected call is a
    # DELETE of a dog made for it, the parameters in its form body.
    made = requests.post(BASE + "/v1/dogs", auth=(USER, PASSWORD), json={"name": "Tmp", "email": "tmp@example.org"})
    expect_status(made, 201)
    r = oauth.delete(BASE + "/v1/dogs/" + made.json()["id"] + "/")
    sent = r.request.body or b""
    expect(b"oauth_signature=" in (sent.encode() if isinstance(sent, str) else sent), "the parameters are not in the body")
    expect_status(r, 204)


def query():
    oauth = three_legged(SIGNATURE_TYPE_QUERY, SIGNATURE_HMAC_SHA1)
    r = oauth.get(BASE + DOG, params={"fields": "all"})
    expect("oauth_signature=" in r.request.url, "the parameters are not in the query")
    expect_status(r, 200)
    r = oauth.post(BASE + "/v1/dogs", json={"name": "Pip", "email": "pip@example.org"})
    expect_status(r, 201)


def plaintext():
    oauth = three_legged(SIGNATURE_TYPE_AUTH_HEADER, SIGNATURE_PLAINTEXT)
    expect_status(oauth.get(BASE + DOG), 200)


scheme = "OAuth 1.0a"
lib = "requests-oauthlib"
run(lib, lib, scheme, "OAuth1Session, HMAC-SHA1, parameters in the Authorization header: request token, sign-in and Allow, "
    "access token, GET and POST; a request changed after signing gets 401 signature_invalid with the server's base string", header(SIGNATURE_HMAC_SHA1))
run(lib, lib, scheme, "the same with HMAC-SHA256", header(SIGNATURE_HMAC_SHA256))
run(lib, lib, scheme, "PLAINTEXT in the header: the three legs and a GET", plaintext)
run(lib, lib, scheme, "signature_type=BODY (form body, RFC 5849 §3.5.2): the three legs and a DELETE", body)
run(lib, lib, scheme, "signature_type=QUERY (RFC 5849 §3.5.3): the three legs, a GET and a JSON POST", query)
done()
