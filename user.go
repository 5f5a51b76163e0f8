package yard

import (
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"
)

// User is a person who can sign in. A dog's owner is a user id.
type User struct {
	ID        string
	Name      string
	Email     string
	Phone     string
	Roles     []string
	Disabled  bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IsAdmin reports whether u holds the admin role.
func (u *User) IsAdmin() bool { return slices.Contains(u.Roles, RoleAdmin) }

// Credentials is the stored secret material of a user.
type Credentials struct {
	// PasswordHash is an argon2id PHC string.
	PasswordHash string
	// HA1MD5 and HA1SHA256 are the RFC 7616 H(username:realm:password)
	// values for the server's realm, written whenever the password is set.
	HA1MD5    string
	HA1SHA256 string
	// PasswordChangedAt orders password changes; caches of verified
	// credentials older than it are stale.
	PasswordChangedAt time.Time
}

// UserUpdate holds the fields a PATCH of a person may change.
type UserUpdate struct {
	Name     *string
	Email    *string
	Phone    *string
	Roles    *[]string
	Disabled *bool
}

// UserFilter narrows a list of users.
type UserFilter struct {
	Name   *string
	Offset int
	Limit  int
}

var (
	userNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)
	phoneRe    = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)
)

// ValidateUser checks the fields of a user before it is written.
func ValidateUser(u *User) error {
	var fields []FieldError
	if !userNameRe.MatchString(u.Name) {
		fields = append(fields, FieldError{"name", "must be 1-64 letters, digits or . _ @ -, starting with a letter or digit"})
	}
	if u.Email != "" && !ValidEmail(u.Email) {
		fields = append(fields, FieldError{"email", "must be a plain e-mail address"})
	}
	if u.Phone != "" && !phoneRe.MatchString(u.Phone) {
		fields = append(fields, FieldError{"phone", "must be an E.164 number such as +14155550100"})
	}
	if len(u.Roles) == 0 {
		fields = append(fields, FieldError{"roles", "must hold at least one role"})
	}
	for _, r := range u.Roles {
		if r != RoleAdmin && r != RoleUser {
			fields = append(fields, FieldError{"roles", "unknown role " + r + "; use admin or user"})
		}
	}
	return invalidFields("The person has invalid fields.", fields)
}

// ValidEmail reports whether s is a bare address such as dog@example.org.
func ValidEmail(s string) bool {
	if len(s) > 254 || strings.ContainsAny(s, " <>") || HasControl(s) {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}
