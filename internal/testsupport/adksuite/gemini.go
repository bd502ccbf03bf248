package adksuite

// geminiTests are filled in as the plugin's tests move here.
var geminiTests = []test{}
