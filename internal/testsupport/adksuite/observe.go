package adksuite

// observeTests are filled in as the plugin's tests move here.
var observeTests = []test{}
