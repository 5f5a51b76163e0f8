package yard_test

import (
	"testing"

	"github.com/yard-api/yard"
)

func TestValidateCodeURL(t *testing.T) {
	good := []string{
		"https://example.org/rex.git",
		"https://example.org:8443/a/b.git",
		"ssh://git@example.org/rex.git",
		"git@example.org:team/rex.git",
		"file:///srv/git/rex.git",
		"file://localhost/srv/git/rex.git",
		"https://example.org/a%2Fb.git",
		"HTTPS://example.org/rex.git",
	}
	for _, s := range good {
		if err := yard.ValidateCodeURL(s); err != nil {
			t.Errorf("%q: got %v, want accepted", s, err)
		}
	}
	bad := []string{
		"-uhttps://example.org/x",
		"--upload-pack=touch /tmp/x",
		"ext::sh -c touch% /tmp/pwned",
		"https://-oProxyCommand=x/y",
		"ssh://-oProxyCommand=touch%20x/y",
		"ssh://example.org/-x",
		"https://example.org/a/-b",
		"git@-oProxyCommand=x:y",
		"git@example.org:-x",
		"git@example.org:a b",
		"https://example.org/a\nb",
		"https://example.org/a\tb",
		"http://example.org/insecure.git",
		"ftp://example.org/x",
		"file://remote-host/x",
		"https://user@example.org/x.git",
		"https://user:secret@example.org/x.git",
		"https://:secret@example.org/x.git",
		"ssh://git:secret@example.org/x.git",
		"ssh://root@example.org/x.git",
		"ssh://alice@example.org/x.git",
		"ssh://-oProxyCommand=x@example.org/x.git",
		"file:relative/path",
		"/plain/path",
		"https:///nohost",
		"https://user\x00@example.org/x",
		// file: without //, which git reads as an ssh address of the host "file".
		"file:/srv/git/rex.git",
		"FILE:/srv/git/rex.git",
		"https:example.org/a",
		// Control characters and white space, percent-encoded: git decodes them.
		"https://example.org/a%0a",
		"https://example.org/a%00b",
		"https://example.org/a%09b",
		"https://example.org/a%20b",
		"ssh://example.org/a%0Ab",
		"file:///srv/a%7fb",
		// A later path segment of the git@host:path form.
		"git@example.org:/-a",
		"git@example.org:a/-b",
		"https://example.org:99999/a",
		"https://example.org:0/a",
		"",
	}
	for _, s := range bad {
		if s == "" {
			continue // an empty codeUrl means none; ValidateDog accepts it
		}
		if err := yard.ValidateCodeURL(s); err == nil {
			t.Errorf("%q: accepted, want refused", s)
		}
	}
}

func TestValidateDog(t *testing.T) {
	d := &yard.Dog{Name: "Rex", Email: "rex@example.org", Owner: "u1", BarkEffect: "howl"}
	err := yard.ValidateDog(d)
	if yard.ErrorCode(err) != yard.EINVALID {
		t.Fatalf("unknown effect: got %v, want invalid", err)
	}
	d.BarkEffect = yard.EffectFetchCode
	if err := yard.ValidateDog(d); err != nil {
		t.Fatalf("valid dog: %v", err)
	}
	for _, e := range []string{"rex", "Rex <rex@example.org>", "rex@example.org\r\nBcc: x@y"} {
		d.Email = e
		if yard.ValidateDog(d) == nil {
			t.Errorf("email %q accepted", e)
		}
	}
}

func TestValidClientID(t *testing.T) {
	for _, id := range []string{"rex", "Rex_1.2-x"} {
		if !yard.ValidClientID(id) {
			t.Errorf("%q refused", id)
		}
	}
	for _, id := range []string{"", "search", "ALL", "by-vendor", "-x", ".x", "a/b", "a b", string(make([]byte, 65))} {
		if yard.ValidClientID(id) {
			t.Errorf("%q accepted", id)
		}
	}
}

func TestDisplayCodeURLHidesCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@example.org/x.git": "https://example.org/x.git",
		"https://token@example.org/x.git":       "https://example.org/x.git",
		"ssh://git:secret@example.org/x.git":    "ssh://example.org/x.git",
		"ssh://git@example.org/x.git":           "ssh://git@example.org/x.git",
		"ssh://root@example.org/x.git":          "ssh://example.org/x.git",
		"git@example.org:team/x.git":            "git@example.org:team/x.git",
		"https://example.org/x.git":             "https://example.org/x.git",
	} {
		if got := yard.DisplayCodeURL(in); got != want {
			t.Errorf("DisplayCodeURL(%q): got %q, want %q", in, got, want)
		}
	}
}
