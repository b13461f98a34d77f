package sqlitestore

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DriverName is the database/sql driver this backend opens: modernc.org/sqlite,
// registered under a name of its own so that opening a connection waits for
// the database like a statement does (see openWait).
const DriverName = "hubsync-sqlite"

func init() {
	sql.Register(DriverName, openWait{&sqlite.Driver{}, BusyTimeoutMillis * time.Millisecond})
}

// openWait retries a connection's open while SQLite reports the database busy,
// for up to the busy timeout. Opening runs the DSN's pragmas, and switching a
// new database to WAL needs it exclusively: a connection opened while another
// one does so fails at once with SQLITE_BUSY, without calling the busy handler
// that busy_timeout installs, so several connections (or processes) opening a
// new database together would fail where their statements would have waited.
type openWait struct {
	driver.Driver
	timeout time.Duration
}

func (d openWait) Open(name string) (driver.Conn, error) {
	deadline := time.Now().Add(d.timeout)
	pause := time.Millisecond
	for {
		c, err := d.Driver.Open(name)
		if err == nil || !isBusy(err) || time.Now().Add(pause).After(deadline) {
			return c, err
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY, in any extended form.
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}
