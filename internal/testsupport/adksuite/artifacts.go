package adksuite

// artifactTests are filled in as the plugin's tests move here.
var artifactTests = []test{}
