package sqlguard_test

import (
	"fmt"

	"github.com/projectdata/projectdata/sqlguard"
)

func ExampleCheck() {
	fmt.Println(sqlguard.Check("SELECT name FROM t WHERE note = 'drop table t'; -- ok"))
	fmt.Println(sqlguard.Check("SELECT 1; DROP TABLE t"))
	fmt.Println(sqlguard.Check("WITH x AS (SELECT 1) DELETE FROM t"))
	// Output:
	// <nil>
	// sqlguard: only one statement is allowed (at byte 10)
	// sqlguard: keyword "DELETE" is not allowed in a read-only query (at byte 21)
}
