package adksuite

// catalogTests are filled in as the plugin's tests move here.
var catalogTests = []test{}
