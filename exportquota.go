package projectdata

import (
	"context"
	"io"
	"sync"
)

// exportQuota holds, per project, what the Store knows in memory of the
// export files being written, so that the exports of a project that run at
// once (up to Options.MaxExportsPerProject) cannot pass
// Options.MaxExportBytes together: each reads the bytes of the ready
// manifests once, when it begins, and every byte written by any of them
// is counted here, under one mutex, before it reaches a file.
//
// The zero value is ready to use; it is safe for concurrent use.
type exportQuota struct {
	mu       sync.Mutex
	projects map[string]*exportsUnderWay // by slug; an entry lives while one of its exports runs
}

// exportsUnderWay is the account of one project's exports under way.
type exportsUnderWay struct {
	running int   // exports under way
	writing int64 // bytes they have written (or reserved) so far
	// recorded counts the bytes of the exports that ended with their
	// manifest recorded since the entry was made: an export under way
	// counts those that ended after it read the manifests, which its read
	// may have missed.
	recorded int64
}

// exportCharge is one export's account against its project's
// Options.MaxExportBytes, from beginExport to end.
type exportCharge struct {
	q     *exportQuota
	slug  string
	max   int64
	u     *exportsUnderWay
	kept  int64 // bytes of the project's ready manifests when it began
	since int64 // u.recorded when it began (before the manifests were read)
	// written is the bytes this export has written or reserved.
	written int64
	ended   bool
}

// beginExport starts the account of an export of p against
// Options.MaxExportBytes: it reconciles the project's manifests with the
// disk (removing expired files), reads the bytes of the ready ones, and
// refuses the export with ErrExportQuotaExceeded when the project is at or
// past the bound already. The caller ends the charge, whatever happens.
func (s *Store) beginExport(ctx context.Context, p *project) (*exportCharge, error) {
	q := &s.exportUse
	q.mu.Lock()
	if q.projects == nil {
		q.projects = map[string]*exportsUnderWay{}
	}
	u := q.projects[p.slug]
	if u == nil {
		u = &exportsUnderWay{}
		q.projects[p.slug] = u
	}
	u.running++
	// since is taken before the manifests are read: an export recorded in
	// between is counted twice (too much, never too little).
	ch := &exportCharge{q: q, slug: p.slug, max: s.opts.MaxExportBytes, u: u, since: u.recorded}
	q.mu.Unlock()

	kept, err := s.reconcileExports(ctx, p) // expired files removed first
	if err != nil {
		ch.end(false)
		return nil, err
	}
	ch.kept = kept

	q.mu.Lock()
	defer q.mu.Unlock()
	if held := ch.held(); held >= ch.max {
		ch.endLocked(false)
		return nil, errorf(ErrExportQuotaExceeded,
			"the exports of project %q hold %d bytes of the %d allowed; %s", p.slug, held, ch.max, quotaHint)
	}
	return ch, nil
}

// quotaHint tells what frees room under Options.MaxExportBytes.
const quotaHint = "room frees as exports expire or as their files are removed"

// held is the bytes the project's export files take, as this export sees
// them: the ready manifests it read, the exports recorded since, and the
// bytes of every export under way (its own included). Called with q.mu
// held.
func (ch *exportCharge) held() int64 {
	return ch.kept + (ch.u.recorded - ch.since) + ch.u.writing
}

// grow counts n more bytes of this export's file, or refuses them with
// ErrExportQuotaExceeded when they would take the project past
// Options.MaxExportBytes. A negative n (a reservation larger than the
// file turned out) is never refused.
func (ch *exportCharge) grow(n int64) error {
	ch.q.mu.Lock()
	defer ch.q.mu.Unlock()
	if held := ch.held(); n > 0 && held+n > ch.max {
		return errorf(ErrExportQuotaExceeded,
			"the export of project %q stopped at %d bytes, as it would take the project's exports past the %d bytes allowed (they hold %d bytes besides it); %s",
			ch.slug, ch.written+n, ch.max, held-ch.written, quotaHint)
	}
	ch.written += n
	ch.u.writing += n
	return nil
}

// end ends the account: the export's bytes leave those under way, and
// count as recorded when its manifest was. It may be called more than
// once; only the first call counts.
func (ch *exportCharge) end(recorded bool) {
	ch.q.mu.Lock()
	defer ch.q.mu.Unlock()
	ch.endLocked(recorded)
}

func (ch *exportCharge) endLocked(recorded bool) {
	if ch.ended {
		return
	}
	ch.ended = true
	ch.u.writing -= ch.written
	if recorded {
		ch.u.recorded += ch.written
	}
	ch.u.running--
	if ch.u.running == 0 {
		delete(ch.q.projects, ch.slug)
	}
}

// quotaWriter writes to w only the bytes that its charge allows: a write
// that would take the project past Options.MaxExportBytes writes nothing
// and fails with ErrExportQuotaExceeded.
type quotaWriter struct {
	w      io.Writer
	charge *exportCharge
}

func (q quotaWriter) Write(b []byte) (int, error) {
	if err := q.charge.grow(int64(len(b))); err != nil {
		return 0, err
	}
	return q.w.Write(b)
}
