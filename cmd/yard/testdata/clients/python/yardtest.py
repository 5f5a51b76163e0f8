"""Shared by the Python client scripts of TestThirdPartyClients.

The Go test (cmd/yard/clients_test.go) starts a real `yard serve` and runs
each script with the server's address and a user's credentials in the
environment, and REQUESTS_CA_BUNDLE / SSL_CERT_FILE naming the server's
certificate; docs/clients.md says how to run one by hand, and which of
these variables have defaults. A script prints one JSON line per flow it ran:

    {"library": "requests", "language": "Python", "version": "2.28.1",
     "scheme": "Basic", "flow": "...", "ok": true}

and exits 1 when a flow failed. The browser part of a delegated flow (sign
in, press Allow on a consent page) is a requests.Session posting the pages'
forms, read with html.parser.
"""

import json
import os
import sys
import traceback
from html.parser import HTMLParser
from importlib.metadata import version
from urllib.parse import urljoin, urlsplit

import requests

def need(name):
    """A variable without a safe default (docs/clients.md, "Running the
    scripts by hand")."""
    if not os.environ.get(name):
        sys.exit("%s: set %s (docs/clients.md, \"Running the scripts by hand\")" % (sys.argv[0], name))
    return os.environ[name]


BASE = os.environ.get("YARD_URL", "https://localhost:8443")  # the server's base URL
USER = need("YARD_USER")
PASSWORD = need("YARD_PASSWORD")
# The server's --token-alg: what the access tokens are signed with, and what
# the JWKS lets a library verify (the default HS256 cannot be).
TOKEN_ALG = os.environ.get("YARD_TOKEN_ALG", "EdDSA")


def _first_dog():
    r = requests.get(BASE + "/v1/dogs", params={"max": 1}, auth=(USER, PASSWORD))
    if r.status_code != 200 or not r.json()["items"]:
        sys.exit("%s: no YARD_DOG, and GET /v1/dogs as %s answered %d %s" % (sys.argv[0], USER, r.status_code, r.text[:300]))
    return "/v1/dogs/%s/" % r.json()["items"][0]["id"]


DOG = os.environ.get("YARD_DOG") or _first_dog()  # /v1/dogs/ID/, a dog of USER (default: the first one)

_failed = False


def run(dist, library, scheme, flow, fn):
    """Runs one flow and prints its result line. fn may return a string: the
    flow's description then (for what the library chose, e.g. an algorithm)."""
    global _failed
    line = {"library": library, "language": "Python", "version": version(dist),
            "scheme": scheme, "flow": flow, "ok": True}
    try:
        got = fn()
        if isinstance(got, str):
            line["flow"] = got
    except Exception as e:  # noqa: BLE001 -- every failure is reported, not raised
        _failed = True
        line["ok"] = False
        line["error"] = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())
    print(json.dumps(line), flush=True)


def done():
    sys.exit(1 if _failed else 0)


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_status(resp, want):
    if resp.status_code != want:
        raise AssertionError("%s %s: got %d, want %d: %s" % (
            resp.request.method, resp.request.url, resp.status_code, want, resp.text[:2000]))


class _Forms(HTMLParser):
    """The forms of a page: action, and the fields a browser would send
    (hidden and text inputs, ticked checkboxes)."""

    def __init__(self):
        super().__init__()
        self.forms = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action", ""), "fields": {}})
        elif tag == "input" and self.forms and a.get("name"):
            kind = a.get("type", "text")
            if kind in ("hidden", "text") or (kind == "checkbox" and "checked" in a):
                self.forms[-1]["fields"][a["name"]] = a.get("value") or ("on" if kind == "checkbox" else "")


def forms(html):
    p = _Forms()
    p.feed(html)
    return p.forms


class Browser:
    """A person at a browser without JavaScript: a cookie jar, redirects
    followed while they stay on yard, forms posted as they are."""

    def __init__(self):
        self.s = requests.Session()
        self.host = urlsplit(BASE).netloc

    def open(self, url):
        """GET url and follow redirects on yard; returns the last response
        (the page, or the redirect that leaves yard)."""
        resp = self.s.get(url, allow_redirects=False)
        return self._follow(resp)

    def submit(self, page_url, form, **fields):
        data = dict(form["fields"])
        data.update(fields)
        resp = self.s.post(urljoin(page_url, form["action"]), data=data, allow_redirects=False)
        return self._follow(resp)

    def _follow(self, resp):
        for _ in range(10):
            if resp.status_code not in (301, 302, 303, 307, 308):
                return resp
            to = urljoin(resp.url, resp.headers["Location"])
            if urlsplit(to).netloc != self.host:
                return resp  # the client's callback: the caller reads Location
            resp = self.s.get(to, allow_redirects=False)
        raise AssertionError("too many redirects")

    def sign_in_and_allow(self, url):
        """Opens url (an authorisation or checkid_setup URL), signs in when
        the sign-in form comes, presses Allow on the consent page, and
        returns the URL yard redirects to."""
        resp = self.open(url)
        page = forms(resp.text)
        if resp.status_code == 200 and page and "password" in resp.text and "/signin" in page[0]["action"]:
            resp = self.submit(resp.url, page[0], username=USER, password=PASSWORD)
        expect_status(resp, 200)
        page = forms(resp.text)
        expect(page and 'value="allow"' in resp.text, "no consent page at %s: %s" % (resp.url, resp.text[:2000]))
        resp = self.submit(resp.url, page[0], decision="allow")
        expect(resp.status_code == 303, "Allow: got %d, want 303: %s" % (resp.status_code, resp.text[:2000]))
        return urljoin(resp.url, resp.headers["Location"])
