package yard

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Bark effects (spec: Dogs (a)-(d)).
const (
	EffectEmail      = "email"       // (a) send a message to the dog's address
	EffectEmailCount = "email-count" // (b) (a) and barkCount + 1
	EffectRecord     = "record"      // (c) a bark record with a timestamp, barkCount + 1
	EffectFetchCode  = "fetch-code"  // (d) fetch the dog's code, then text the owner
)

// ValidEffect reports whether e names one of the four bark effects.
func ValidEffect(e string) bool {
	return slices.Contains([]string{EffectEmail, EffectEmailCount, EffectRecord, EffectFetchCode}, e)
}

// Dog is a dog that barks.
type Dog struct {
	ID           string
	Name         string
	Email        string
	Owner        string // user id
	BarkCount    int64
	BarkEffect   string
	CodeURL      string
	CodeRevision string
	// Schedule is the recurring bark, nil when none is set.
	Schedule  *BarkSchedule
	CreatedAt time.Time
	UpdatedAt time.Time
}

// BarkSchedule is the one recurring bark of a dog. The PATCH of the dog, the
// bark-schedule resource and barks in the dog representation are views of it.
type BarkSchedule struct {
	Next      time.Time
	Frequency int // minutes
	// Last is the time of the last bark, zero when it never barked.
	Last time.Time
	// Previous lists the times of past barks, newest first (at most 20).
	Previous []time.Time
}

// DogUpdate holds the writable fields of a dog; nil leaves a field unchanged.
type DogUpdate struct {
	Name       *string
	Email      *string
	Owner      *string
	BarkEffect *string
	CodeURL    *string
}

// DogFilter narrows a list of dogs.
type DogFilter struct {
	Owner  *string // only dogs of this owner; nil for all
	Offset int
	Limit  int
}

// ValidateDog checks the fields of a dog before it is written.
func ValidateDog(d *Dog) error {
	var fields []FieldError
	if strings.TrimSpace(d.Name) == "" || len(d.Name) > 200 {
		fields = append(fields, FieldError{"name", "must be 1-200 characters"})
	} else if HasControl(d.Name) {
		fields = append(fields, FieldError{"name", "must not hold control characters"})
	}
	if !ValidEmail(d.Email) {
		fields = append(fields, FieldError{"email", "must be a plain e-mail address"})
	}
	if d.Owner == "" {
		fields = append(fields, FieldError{"owner", "must be the id of a person"})
	}
	if !ValidEffect(d.BarkEffect) {
		fields = append(fields, FieldError{"barkEffect", "must be one of email, email-count, record, fetch-code"})
	}
	if d.CodeURL != "" {
		if err := ValidateCodeURL(d.CodeURL); err != nil {
			fields = append(fields, FieldError{"codeUrl", err.Error()})
		}
	}
	return invalidFields("The dog has invalid fields.", fields)
}

var scpLikeRe = regexp.MustCompile(`^git@([A-Za-z0-9][A-Za-z0-9.-]*):([A-Za-z0-9_./~][A-Za-z0-9_./~+-]*)$`)

// ValidateCodeURL checks a dog's codeUrl so that no value can inject a
// command or an option into the fetch command: https://, ssh://, git@host:path
// and file:// only; no part may start with '-', and no control characters or
// white space anywhere.
func ValidateCodeURL(s string) error {
	if len(s) > 2048 {
		return errors.New("must be at most 2048 characters")
	}
	if strings.HasPrefix(s, "-") {
		return errors.New("must not start with '-'")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return errors.New("must not hold control characters or white space")
	}
	// Nor percent-encoded: git decodes them in ssh:// and file:// URLs.
	for i := 0; i+2 < len(s); i++ {
		if s[i] != '%' {
			continue
		}
		if b, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil && (b < 0x21 || b == 0x7f) {
			return errors.New("must not hold control characters or white space, also percent-encoded")
		}
	}
	if strings.HasPrefix(s, "git@") {
		m := scpLikeRe.FindStringSubmatch(s)
		if m == nil {
			return errors.New("git@host:path form is malformed")
		}
		if strings.HasPrefix(m[1], "-") || strings.HasPrefix(m[2], "-") || strings.Contains(m[2], "/-") {
			return errors.New("host and path segments must not start with '-'")
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("is not a URL")
	}
	// scheme://, as git reads it: "file:/path" is to git an ssh address
	// of the host "file".
	if !strings.HasPrefix(strings.ToLower(s), u.Scheme+"://") {
		return errors.New("must be scheme://host/path (https://, ssh://, file://) or the git@host:path form")
	}
	switch u.Scheme {
	case "https", "ssh":
		if u.Host == "" || strings.HasPrefix(u.Host, "-") || strings.HasPrefix(u.Hostname(), "-") {
			return errors.New("must name a host that does not start with '-'")
		}
		if p := u.Port(); p != "" {
			if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
				return errors.New("port must be a number from 1 to 65535")
			}
		}
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return errors.New("file:// URLs must be local")
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return errors.New("file:// URLs need an absolute path")
		}
	default:
		return errors.New("scheme must be https, ssh, file, or the git@host:path form")
	}
	if strings.HasPrefix(strings.TrimPrefix(u.Path, "/"), "-") || strings.Contains(u.Path, "/-") {
		return errors.New("path segments must not start with '-'")
	}
	// Credentials do not belong in a URL that readers of the dog see
	// (RFC 3986 §3.2.1 deprecates them). ssh:// may name the user git,
	// as the git@host:path form does, and nothing more.
	if u.User != nil && !sshGitUser(u) {
		return errors.New("must not hold user info (a user name or password); ssh:// may only name the user git, as in ssh://git@host/path")
	}
	return nil
}

// sshGitUser reports whether u's user info is the one an ssh:// codeUrl
// may hold: the user git, without a password (the user of the
// git@host:path form).
func sshGitUser(u *url.URL) bool {
	_, hasPassword := u.User.Password()
	return u.Scheme == "ssh" && !hasPassword && u.User.Username() == "git"
}

// DisplayCodeURL returns a codeUrl as it may be shown to readers of the
// dog: without user info other than ssh://git@ (a value stored before
// user info was refused keeps its user and password out of every answer).
func DisplayCodeURL(s string) string {
	if strings.HasPrefix(s, "git@") || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	if u.User == nil || sshGitUser(u) {
		return s
	}
	u.User = nil
	return u.String()
}
