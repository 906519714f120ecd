package runtime

import (
	"strings"
	"time"

	"sandboxd"
	"sandboxd/internal/typescript"
)

// transpile turns a typescript job's code into the JavaScript its stub
// runs, with its source map inline (internal/typescript), before the job
// takes a container; a job in another language is returned as it is. A
// syntax error is the program's own answer, not the service's failure:
// res is then status error, exit status 1, esbuild's diagnostics on stderr
// (cut at maxOut bytes, without truncated: truncated is an output limit's,
// and the diagnostics are not the program's output), no usage and no
// files, and no container is taken.
func transpile(job sandboxd.Job, maxOut int64) (_ sandboxd.Job, res *sandboxd.Result) {
	if job.Language != sandboxd.LanguageTypeScript {
		return job, nil
	}
	began := time.Now()
	js, diagnostics, ok := typescript.Transpile(job.Code)
	if ok {
		job.Code = js
		return job, nil
	}
	res = &sandboxd.Result{Status: sandboxd.StatusError, ExitCode: 1, Stderr: diagnostics}
	if maxOut > 0 && int64(len(diagnostics)) > maxOut {
		res.Stderr = strings.ToValidUTF8(diagnostics[:maxOut], "")
	}
	res.Duration = time.Since(began)
	return job, res
}
