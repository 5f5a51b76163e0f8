package console

import (
	"net/http"
	"strconv"
)

// backup is a backup as GET /v1/backups shows it (docs/api.md, "Backups").
type backup struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	CreatedAt string `json:"createdAt"`
}

// Bytes is the backup's size for people: "12.3 MB".
func (b backup) Bytes() string {
	switch {
	case b.Size >= 1<<20:
		return strconv.FormatFloat(float64(b.Size)/(1<<20), 'f', 1, 64) + " MB"
	case b.Size >= 1<<10:
		return strconv.FormatFloat(float64(b.Size)/(1<<10), 'f', 1, 64) + " KB"
	}
	return strconv.FormatInt(b.Size, 10) + " bytes"
}

// backups is the server page's part for backups: on POST ("Back up now")
// a backup through POST /v1/backups, whose refusal (409 while another is
// taken or on PostgreSQL, 429 within a minute of the newest) the page
// shows with its status; then the list, GET /v1/backups.
func (c *Console) backups(cl *call, r *http.Request) list[backup] {
	if r.Method == http.MethodPost {
		var b backup
		res := result{Status: http.StatusBadRequest}
		if r.PostForm.Get("op") == "backup" {
			res = cl.do("POST", "/v1/backups", nil, nil)
		}
		if cl.accepted(res, &b) {
			cl.notice = "Backed up into " + b.Name + " (" + b.Bytes() + ")."
		}
	}
	return readList[backup](cl, r, "/v1/backups", Prefix+"admin/server?")
}
