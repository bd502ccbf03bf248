package sandboxserver

import (
	"reflect"
	"testing"
	"time"

	"github.com/adk-codemode/codemode/internal/both/server"
)

// TestConfigReachesServer fills every field of Config and checks that the
// session's server gets each under the same name: a field added here and
// not passed on would be silently ignored.
func TestConfigReachesServer(t *testing.T) {
	var c Config
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + v.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			if f.Type() == reflect.TypeFor[time.Duration]() {
				f.SetInt(int64(time.Duration(i+1) * time.Second))
			} else {
				f.SetInt(int64(i + 1))
			}
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"E" + v.Type().Field(i).Name + "=1"}))
		default:
			t.Fatalf("field %s of kind %s: teach this test to fill it", v.Type().Field(i).Name, f.Kind())
		}
	}
	got := reflect.ValueOf(c.server())
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		sf := got.FieldByName(name)
		if !sf.IsValid() {
			t.Errorf("Config.%s has no field of that name in the server's config", name)
			continue
		}
		if !reflect.DeepEqual(sf.Interface(), v.Field(i).Interface()) {
			t.Errorf("Config.%s = %v reaches the server as %v", name, v.Field(i).Interface(), sf.Interface())
		}
	}
	if reflect.TypeFor[server.Config]().NumField() < v.NumField() {
		t.Error("the server's config has fewer fields than Config")
	}
}
