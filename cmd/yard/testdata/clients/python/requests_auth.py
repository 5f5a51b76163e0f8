"""requests (python3-requests): Basic, Digest and the cookie session, used
as requests' documentation shows (auth=, HTTPDigestAuth, Session)."""

import re

import requests
from requests.auth import HTTPBasicAuth, HTTPDigestAuth

from yardtest import BASE, DOG, PASSWORD, USER, done, expect, expect_status, run


def basic():
    r = requests.get(BASE + DOG, auth=HTTPBasicAuth(USER, PASSWORD))
    expect_status(r, 200)
    expect(r.json()["id"] in DOG, "another dog: %s" % r.text)
    r = requests.get(BASE + DOG, auth=(USER, PASSWORD + "x"))
    expect_status(r, 401)
    expect(r.headers["Content-Type"].startswith("application/problem+json"), "no problem body")


def digest():
    auth = HTTPDigestAuth(USER, PASSWORD)
    s = requests.Session()
    s.auth = auth
    first = s.get(BASE + DOG)
    expect_status(first, 200)
    # requests answered the 401's challenge; the second request reuses the
    # nonce with the next nonce count, without a new challenge.
    expect(len(first.history) == 1 and first.history[0].status_code == 401, "no challenge answered")
    second = s.get(BASE + DOG)
    expect_status(second, 200)
    sent = second.request.headers["Authorization"]
    expect(not second.history and "nc=00000002" in sent, "nonce not reused: %s" % sent)
    # requests merges the two challenges (SHA-256, then MD5) into one and
    # keeps the last algorithm= (docs/clients.md).
    alg = re.search(r'algorithm="?([A-Za-z0-9-]+)', sent).group(1)
    return "HTTPDigestAuth: the 401 challenge answered with algorithm=%s (requests keeps the last challenge's), then the nonce reused (nc=00000002)" % alg


def session():
    s = requests.Session()
    r = s.post(BASE + "/sessions", json={"username": USER, "password": PASSWORD})
    expect_status(r, 201)
    expect("sessionToken" in s.cookies, "no sessionToken cookie")
    key = r.json()["key"]
    r = s.get(BASE + DOG)
    expect_status(r, 200)
    r = s.delete(BASE + "/sessions/" + key)
    expect_status(r, 204)
    r = s.get(BASE + DOG)
    expect_status(r, 401)


run("requests", "requests", "Basic", "GET with auth=(user, password); a wrong password is a 401 problem", basic)
run("requests", "requests", "Digest", "HTTPDigestAuth: the 401 challenge answered, then the nonce reused", digest)
run("requests", "requests", "Cookie session",
    "POST /sessions (JSON) into a requests.Session, GET with the cookie, DELETE /sessions/{key}, then 401", session)
done()
