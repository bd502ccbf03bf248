package adksuite

// approvalTests are filled in as the plugin's tests move here.
var approvalTests = []test{}
