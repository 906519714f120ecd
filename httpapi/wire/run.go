// Package wire holds the JSON bodies of the API's answers, one type each:
// what POST /v1/code and the session routes answer over HTTP is what the
// MCP tools (httpapi/mcptools) return as structuredContent, and what a
// retry reads back from the kept answers. The requests stay httpapi's,
// which decodes and validates them.
package wire

import (
	"encoding/base64"

	"sandboxd"
)

// CodeResponse is the answer of a delivered run, on HTTP and MCP alike: the
// JSON body of a 200 from POST /v1/code and the structured result of a run
// tool. Tests decode it through internal/servicetest.Answer.
type CodeResponse struct {
	Lang       string `json:"lang"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	ExitCode   int    `json:"exit_code"`
	Status     string `json:"status"`
	TimedOut   bool   `json:"timed_out"`
	OOMKilled  bool   `json:"oom_killed"`
	Truncated  bool   `json:"truncated"`
	DurationMS int64  `json:"duration_ms"`
	// CPUMS and MaxRSSKB are null when the program did not end by itself.
	CPUMS    *int64 `json:"cpu_ms"`
	MaxRSSKB *int64 `json:"max_rss_kb"`
	// Environment is the environment the program ran in.
	Environment string `json:"environment"`
	// Files are the files the program created or changed, in name order;
	// never null.
	Files []FileOut `json:"files"`
	// FilesTruncated reports that a file is listed without its content:
	// the files were over the caps.
	FilesTruncated bool `json:"files_truncated"`
}

// FileOut is one file of an answer: a file the program created or changed.
type FileOut struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	// Content is the file's bytes, standard base64 with padding; absent
	// when the file was over the caps.
	Content *string `json:"content,omitempty"`
}

// NewFilesOut is the answer's list of the files out: never nil.
func NewFilesOut(files []sandboxd.File) []FileOut {
	out := make([]FileOut, 0, len(files))
	for _, f := range files {
		fo := FileOut{Name: f.Name, Size: f.Size, MediaType: f.MediaType}
		if f.Content != nil {
			content := base64.StdEncoding.EncodeToString(f.Content)
			fo.Content = &content
		}
		out = append(out, fo)
	}
	return out
}

// NewCodeResponse is the answer of a delivered run of job.
func NewCodeResponse(job sandboxd.Job, res sandboxd.Result) CodeResponse {
	resp := CodeResponse{
		Lang:       job.Language,
		Stdout:     res.Stdout,
		Stderr:     res.Stderr,
		ExitCode:   res.ExitCode,
		Status:     string(res.Status),
		TimedOut:   res.TimedOut,
		OOMKilled:  res.OOMKilled,
		Truncated:  res.Truncated,
		DurationMS: res.Duration.Milliseconds(),

		Environment:    job.Environment,
		Files:          NewFilesOut(res.Files),
		FilesTruncated: res.FilesTruncated,
	}
	if u := res.Usage; u != nil {
		cpu, rss := u.CPU.Milliseconds(), u.MaxRSSKB
		resp.CPUMS, resp.MaxRSSKB = &cpu, &rss
	}
	return resp
}

// FilesOf is the files out of an answer as the runner gave them, the
// inverse of NewFilesOut: what a replayed tool result's image blocks are
// made of (a content that does not decode is left out).
func FilesOf(out []FileOut) []sandboxd.File {
	files := make([]sandboxd.File, 0, len(out))
	for _, f := range out {
		file := sandboxd.File{Name: f.Name, Size: f.Size, MediaType: f.MediaType}
		if f.Content != nil {
			if content, err := base64.StdEncoding.DecodeString(*f.Content); err == nil {
				file.Content = content
			}
		}
		files = append(files, file)
	}
	return files
}
