package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// The pages, by template file.
const (
	pageFleet          = "fleet.html"
	pageJobs           = "jobs.html"
	pageJob            = "job.html"
	pageReleaseConfirm = "release.html"
	pageReleased       = "released.html"
	pageTriggered      = "triggered.html"
	pageError          = "error.html"
)

// pages are the parsed templates, each with the layout.
type pages struct {
	byName map[string]*template.Template
}

func parsePages() (*pages, error) {
	funcs := template.FuncMap{
		"utc":      utc,
		"span":     span,
		"relative": relative,
		"took":     took,
	}
	ps := &pages{byName: map[string]*template.Template{}}
	for _, name := range []string{pageFleet, pageJobs, pageJob, pageReleaseConfirm, pageReleased, pageTriggered, pageError} {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		ps.byName[name] = t
	}
	return ps, nil
}

// layout is what every page's layout needs.
type layout struct {
	Base     string // the console's base path ("" at the root)
	Title    string
	Nav      string        // the section to highlight: "fleet" or "jobs"
	Refresh  int           // seconds between reloads, 0 for none
	ReadOnly bool          // no authorizer: say that actions are off
	Status   int           // the HTTP status, for error pages
	Page     any           // the page's own data
	Served   time.Time     // when the page was rendered (local clock)
	Took     time.Duration // server time spent reading the store
	// Unreadable are the live replicas whose registry entries could not
	// be read: the page shows the others, and says so.
	Unreadable []string
}

// render writes page with its data and the status.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, l layout) {
	l.Base = c.base
	l.ReadOnly = c.authorize == nil
	l.Status = status
	l.Served = c.now()
	var buf bytes.Buffer
	if err := c.pages.byName[page].ExecuteTemplate(&buf, "layout", l); err != nil {
		c.log.Error("console: rendering a page failed", slog.String("page", page), slog.Any("error", err))
		http.Error(w, "internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// errorPage is the data of an error page.
type errorPage struct {
	Message string
	JobURL  string // a link back to the job, if the error concerns one
	Job     string
}

// fail answers status with an error page saying msg. err, when not nil,
// is logged (at error level for 5xx, at info otherwise); it is never
// shown on the page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string, err error, job ...string) {
	if err != nil {
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		c.log.Log(r.Context(), level, "console: request failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", status), slog.Any("error", err))
	}
	p := errorPage{Message: msg}
	if len(job) == 1 && job[0] != "" {
		p.Job, p.JobURL = job[0], c.jobURL(job[0])
	}
	c.render(w, r, status, pageError, layout{Title: http.StatusText(status), Page: p})
}

// jobURL is the address of a job's page.
func (c *Console) jobURL(name string) string {
	return c.base + "/jobs/" + url.PathEscape(name)
}

// refreshSeconds is the pages' reload period in seconds.
func (c *Console) refreshSeconds() int { return int(c.refresh / time.Second) }

// staticHandler serves the embedded assets under /static/.
func staticHandler() http.Handler {
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded tree has a static directory
	}
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		files.ServeHTTP(w, r)
	})
}
