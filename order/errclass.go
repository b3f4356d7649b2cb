package order

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// retryReason is the label of seckill_order_writer_retries_total for a failed write: what
// was sick (writerRetryCauses).
func retryReason(err error) string {
	switch classify(err) {
	case classLock:
		if errors.Is(err, ErrLockBusy) {
			return "lock"
		}
		return "mysql"
	case classRedis:
		return "redis"
	case classPanic:
		return "panic"
	case classConnection, classTimeout, classResource, classReadOnly, classServer, classPoison:
		var me *mysql.MySQLError
		if errors.As(err, &me) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) {
			return "mysql"
		}
	}
	return "other"
}

// errClass is what a failed write means. Only classPoison is about the order itself (the
// row can never be stored); every other class is about MySQL, Redis or the process, and
// waits.
type errClass string

const (
	classPoison     errClass = "poison"     // the row violates a constraint on its own
	classConnection errClass = "connection" // MySQL (or Redis) unreachable or the connection broke
	classTimeout    errClass = "timeout"    // a statement or the call ran out of time
	classLock       errClass = "lock"       // lock wait, deadlock: a row lock, or the compensator's Redis lock, held elsewhere
	classResource   errClass = "resource"   // disk, table, memory or thread limits
	classReadOnly   errClass = "read_only"  // server or transaction read-only (failover)
	classServer     errClass = "server"     // any other MySQL server error (schema, engine, ...)
	classRedis      errClass = "redis"      // an error answered by Redis
	classPanic      errClass = "panic"      // the write panicked
	classCanceled   errClass = "canceled"   // the caller gave up (shutdown)
	classUnknown    errClass = "unknown"    // anything else: treated as transient
)

// errClasses lists every class, to pre-create the metric's series.
var errClasses = []errClass{classPoison, classConnection, classTimeout, classLock, classResource,
	classReadOnly, classServer, classRedis, classPanic, classUnknown}

// classify says what err means for the write. MySQL errors are classified by what the code
// says about the row: only data errors of the row itself (too long, out of range, bad null,
// wrong value, check or foreign key constraint, duplicate key) are poison; every other code,
// known or not, is a state of the server that can heal.
func classify(err error) errClass {
	var me *mysql.MySQLError
	var pe *PanicError
	var re redis.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrBadMessage):
		return classPoison
	case errors.As(err, &pe):
		return classPanic
	case errors.Is(err, ErrLockBusy):
		return classLock
	case errors.As(err, &me):
		return classifyMySQL(me.Number)
	case errors.Is(err, context.Canceled):
		return classCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return classTimeout
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.Is(err, redis.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return classConnection
	case errors.As(err, &re):
		return classRedis
	}
	var ne net.Error
	if errors.As(err, &ne) {
		if ne.Timeout() {
			return classTimeout
		}
		return classConnection
	}
	return classUnknown
}

// MySQL and MariaDB error codes, by the server's names (ER_*; CR_* are the client's, as some
// proxies answer them). Only the codes classifyMySQL names are listed.
const (
	// The row's own data: poison.
	erBadNullError            = 1048 // ER_BAD_NULL_ERROR
	erDupEntry                = 1062 // ER_DUP_ENTRY (a unique key other than the idempotent one)
	erWarnNullToNotNull       = 1263 // ER_WARN_NULL_TO_NOTNULL
	erWarnDataOutOfRange      = 1264 // ER_WARN_DATA_OUT_OF_RANGE
	warnDataTruncated         = 1265 // WARN_DATA_TRUNCATED
	erTruncatedWrongValue     = 1292 // ER_TRUNCATED_WRONG_VALUE
	erInvalidCharString       = 1300 // ER_INVALID_CHARACTER_STRING
	erTruncatedValueField     = 1366 // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD (incorrect string value)
	erIllegalValueForType     = 1367 // ER_ILLEGAL_VALUE_FOR_TYPE
	erDataTooLong             = 1406 // ER_DATA_TOO_LONG
	erWrongValueForType       = 1411 // ER_WRONG_VALUE_FOR_TYPE
	erRowIsReferenced         = 1451 // ER_ROW_IS_REFERENCED_2 (foreign key)
	erNoReferencedRow         = 1452 // ER_NO_REFERENCED_ROW_2 (foreign key)
	erDataOutOfRange          = 1690 // ER_DATA_OUT_OF_RANGE
	erCheckConstraintViolated = 3819 // MySQL ER_CHECK_CONSTRAINT_VIOLATED
	erConstraintFailed        = 4025 // MariaDB ER_CONSTRAINT_FAILED (CHECK)

	// The connection: refused, dropped, or the server going away.
	erConCount             = 1040 // ER_CON_COUNT_ERROR (too many connections)
	erBadHost              = 1042 // ER_BAD_HOST_ERROR
	erHandshake            = 1043 // ER_HANDSHAKE_ERROR
	erDBAccessDenied       = 1044 // ER_DBACCESS_DENIED_ERROR
	erAccessDenied         = 1045 // ER_ACCESS_DENIED_ERROR
	erServerShutdown       = 1053 // ER_SERVER_SHUTDOWN
	erNormalShutdown       = 1077 // ER_NORMAL_SHUTDOWN
	erShutdownComplete     = 1079 // ER_SHUTDOWN_COMPLETE
	erForcingClose         = 1080 // ER_FORCING_CLOSE
	erIPSock               = 1081 // ER_IPSOCK_ERROR
	erAbortingConnection   = 1152 // ER_ABORTING_CONNECTION
	erNetPacketTooLarge    = 1153 // ER_NET_PACKET_TOO_LARGE
	erNetReadErrorFromPipe = 1154 // ER_NET_READ_ERROR_FROM_PIPE
	erNetFcntl             = 1155 // ER_NET_FCNTL_ERROR
	erNetPacketsOutOfOrder = 1156 // ER_NET_PACKETS_OUT_OF_ORDER
	erNetUncompress        = 1157 // ER_NET_UNCOMPRESS_ERROR
	erNetRead              = 1158 // ER_NET_READ_ERROR
	erNetReadInterrupted   = 1159 // ER_NET_READ_INTERRUPTED
	erNetErrorOnWrite      = 1160 // ER_NET_ERROR_ON_WRITE
	erNetWriteInterrupted  = 1161 // ER_NET_WRITE_INTERRUPTED
	erNewAbortingConn      = 1184 // ER_NEW_ABORTING_CONNECTION
	erConnectionKilled     = 1927 // MariaDB ER_CONNECTION_KILLED
	crConnectionError      = 2002 // CR_CONNECTION_ERROR
	crConnHostError        = 2003 // CR_CONN_HOST_ERROR
	crServerGone           = 2006 // CR_SERVER_GONE_ERROR
	crServerLost           = 2013 // CR_SERVER_LOST
	crServerLostExtended   = 2055 // CR_SERVER_LOST_EXTENDED

	// A statement that ran out of time or was interrupted.
	erFilsortAbort     = 1028 // ER_FILSORT_ABORT
	erQueryInterrupted = 1317 // ER_QUERY_INTERRUPTED
	erStatementTimeout = 1969 // MariaDB ER_STATEMENT_TIMEOUT (max_statement_time)
	erQueryTimeout     = 3024 // MySQL ER_QUERY_TIMEOUT (max_execution_time)

	// Locks.
	erTableNotLockedForWrite = 1099 // ER_TABLE_NOT_LOCKED_FOR_WRITE
	erTableNotLocked         = 1100 // ER_TABLE_NOT_LOCKED
	erLockWaitTimeout        = 1205 // ER_LOCK_WAIT_TIMEOUT
	erLockDeadlock           = 1213 // ER_LOCK_DEADLOCK
	erLockAborted            = 1689 // ER_LOCK_ABORTED

	// Disk, memory, thread and table limits.
	erDiskFull              = 1021 // ER_DISK_FULL
	erGetErrno              = 1030 // ER_GET_ERRNO (the storage engine's error)
	erOutOfMemory           = 1037 // ER_OUTOFMEMORY
	erOutOfSortMemory       = 1038 // ER_OUT_OF_SORTMEMORY
	erOutOfResources        = 1041 // ER_OUT_OF_RESOURCES
	erRecordFileFull        = 1114 // ER_RECORD_FILE_FULL (the table is full)
	erCantCreateThread      = 1135 // ER_CANT_CREATE_THREAD
	erTransCacheFull        = 1197 // ER_TRANS_CACHE_FULL
	erLockTableFull         = 1206 // ER_LOCK_TABLE_FULL
	erTooManyConcurrentTrxs = 1637 // ER_TOO_MANY_CONCURRENT_TRXS

	// A read-only server or transaction (a failover in progress).
	erCantUpdateWithReadlock = 1223 // ER_CANT_UPDATE_WITH_READLOCK
	erOptionPreventsStmt     = 1290 // ER_OPTION_PREVENTS_STATEMENT (--read-only)
	erReadOnlyTransaction    = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	erReadOnlyMode           = 1836 // ER_READ_ONLY_MODE
	erInnodbReadOnly         = 1874 // ER_INNODB_READ_ONLY

	// mysqlServerCodes bounds the server's own codes: from it on, a code is not one this
	// classification knows the range of.
	mysqlServerCodes = 5000
)

// classifyMySQL classifies a MySQL or MariaDB error code.
func classifyMySQL(code uint16) errClass {
	switch code {
	case erBadNullError, erDupEntry, erWarnNullToNotNull, erWarnDataOutOfRange, warnDataTruncated,
		erTruncatedWrongValue, erInvalidCharString, erTruncatedValueField, erIllegalValueForType,
		erDataTooLong, erWrongValueForType, erRowIsReferenced, erNoReferencedRow, erDataOutOfRange,
		erCheckConstraintViolated, erConstraintFailed:
		return classPoison
	case erConCount, erBadHost, erHandshake, erDBAccessDenied, erAccessDenied, erServerShutdown,
		erNormalShutdown, erShutdownComplete, erForcingClose, erIPSock, erAbortingConnection,
		erNetPacketTooLarge, erNetReadErrorFromPipe, erNetFcntl, erNetPacketsOutOfOrder,
		erNetUncompress, erNetRead, erNetReadInterrupted, erNetErrorOnWrite, erNetWriteInterrupted,
		erNewAbortingConn, erConnectionKilled, crConnectionError, crConnHostError, crServerGone,
		crServerLost, crServerLostExtended:
		return classConnection
	case erFilsortAbort, erQueryInterrupted, erStatementTimeout, erQueryTimeout:
		return classTimeout
	case erTableNotLockedForWrite, erTableNotLocked, erLockWaitTimeout, erLockDeadlock, erLockAborted:
		return classLock
	case erDiskFull, erGetErrno, erOutOfMemory, erOutOfSortMemory, erOutOfResources,
		erRecordFileFull, erCantCreateThread, erTransCacheFull, erLockTableFull,
		erTooManyConcurrentTrxs:
		return classResource
	case erCantUpdateWithReadlock, erOptionPreventsStmt, erReadOnlyTransaction, erReadOnlyMode,
		erInnodbReadOnly:
		return classReadOnly
	}
	if code < mysqlServerCodes {
		return classServer
	}
	return classUnknown
}

// isTransient reports whether err may go away by itself: every class but poison.
func isTransient(err error) bool {
	return classify(err) != classPoison
}
