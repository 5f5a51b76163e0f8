package sigbase

import "testing"

func TestOAuthAuthorization(t *testing.T) {
	got := OAuthAuthorization("yard", [][2]string{{"oauth_consumer_key", "k"}, {"oauth_callback", "https://c.example/cb?a=1"}, {"oauth_signature", "a+b/c="}})
	want := `OAuth realm="yard", oauth_consumer_key="k", oauth_callback="https%3A%2F%2Fc.example%2Fcb%3Fa%3D1", oauth_signature="a%2Bb%2Fc%3D"`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
