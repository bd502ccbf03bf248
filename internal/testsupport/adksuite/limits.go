package adksuite

// limitTests are filled in as the plugin's tests move here.
var limitTests = []test{}
