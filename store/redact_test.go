package store

import (
	"strings"
	"testing"
)

// TestRedactDSN: no password of a connection string reaches a log, in the
// URL's user information, as a URL parameter or as a key=value pair.
func TestRedactDSN(t *testing.T) {
	for _, dsn := range []string{
		"postgres://yard:Sekr1t@db.example:5432/yard?sslmode=require",
		"postgres://yard@db.example/yard?sslmode=disable&password=Sekr1t",
		"postgres://yard@db.example/yard?PASSWORD=Sekr1t&sslmode=disable",
		"host=db.example user=yard password=Sekr1t dbname=yard",
		"host=db.example password='Sek r1t \\' x' dbname=yard",
	} {
		got := redactDSN(dsn)
		if strings.Contains(got, "Sek") || !strings.Contains(got, "db.example") {
			t.Errorf("redactDSN(%q) = %q: want the password hidden and the rest kept", dsn, got)
		}
	}
	if got := redactDSN("sqlite:/var/lib/yard/yard.db"); got != "sqlite:/var/lib/yard/yard.db" {
		t.Errorf("a path without a password changed: %q", got)
	}
}
