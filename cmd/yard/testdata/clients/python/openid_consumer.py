"""python3-openid: the JanRain relying-party library (openid.consumer),
as its documentation describes: Consumer.begin discovers the provider and
associates, AuthRequest.redirectURL makes the checkid_setup URL, and
Consumer.complete verifies the positive assertion."""

from urllib.parse import parse_qs, parse_qsl, urlsplit

from openid import fetchers
from openid.consumer.consumer import SUCCESS, Consumer
from openid.store.memstore import MemoryStore

from yardtest import BASE, USER, Browser, done, expect, run

REALM = "https://rp.example.org/"
RETURN_TO = "https://rp.example.org/back"

browser = Browser()


class Recorder(fetchers.Urllib2Fetcher):
    """The library's own fetcher, remembering the direct requests it posts
    (installed with fetchers.setDefaultFetcher), to check which association
    and verification the library chose."""

    posted = []

    def fetch(self, url, body=None, headers=None):
        if body:
            self.posted.append({k: v[0] for k, v in parse_qs(body).items()})
        return super().fetch(url, body, headers)


fetchers.setDefaultFetcher(Recorder())


def posted(mode):
    return [p for p in Recorder.posted if p.get("openid.mode") == mode]


def sign_in(identifier, store, preference=None):
    """One sign-in at a relying party with store (None: stateless);
    returns the association the store holds afterwards, if any."""
    session = {}
    consumer = Consumer(session, store)
    if preference:
        consumer.setAssociationPreference(preference)
    request = consumer.begin(identifier)
    expect(request.endpoint.server_url == BASE + "/openid/login", "discovered %s" % request.endpoint.server_url)
    back = browser.sign_in_and_allow(request.redirectURL(REALM, RETURN_TO))
    expect(back.startswith(RETURN_TO + "?"), "sent back to %s" % back)
    # The relying party's own handler: a new Consumer over the same session.
    response = Consumer(session, store).complete(dict(parse_qsl(urlsplit(back).query)), back)
    expect(response.status == SUCCESS, "complete: %s %s" % (response.status, getattr(response, "message", "")))
    expect(response.identity_url == BASE + "/openid/id/" + USER, "identity %s" % response.identity_url)
    if store is None:
        return None
    assoc = store.getAssociation(BASE + "/openid/login")
    expect(assoc is not None, "no association in the store")
    return assoc


def associated(preference, want_assoc, want_session):
    def flow():
        Recorder.posted.clear()
        assoc = sign_in(BASE + "/openid", MemoryStore(), preference)
        expect(assoc.assoc_type == want_assoc, "association %s, want %s" % (assoc.assoc_type, want_assoc))
        asked = posted("associate")
        expect(len(asked) == 1 and asked[0].get("openid.session_type") == want_session, "associate requests: %s" % asked)
        expect(not posted("check_authentication"), "check_authentication with an association")
    return flow


def stateless():
    Recorder.posted.clear()
    sign_in(BASE + "/openid/id/" + USER, None)
    expect(not posted("associate") and len(posted("check_authentication")) == 1, "direct requests: %s" % Recorder.posted)


lib = "python3-openid"
scheme = "OpenID 2.0"
run(lib, lib, scheme, "discovery of the OP identifier /openid (XRDS), HMAC-SHA1 association by DH-SHA1 (the library's default), "
    "checkid_setup, sign-in and Allow, complete() → SUCCESS with the user's identifier", associated(None, "HMAC-SHA1", "DH-SHA1"))
run(lib, lib, scheme, "the same with setAssociationPreference HMAC-SHA256/DH-SHA256",
    associated([("HMAC-SHA256", "DH-SHA256")], "HMAC-SHA256", "DH-SHA256"))
run(lib, lib, scheme, "stateless (no store): discovery of the claimed identifier /openid/id/{name}, "
    "complete() verifies with check_authentication", stateless)
done()
